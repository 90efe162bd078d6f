package dev.gatun.cuda.junit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.Device;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.Simulated;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/** Device, CudaContext and Stream parameters: which device, which context, and a stream per test closed after it. */
class InjectionTest {

    /** What the fixtures were given, for the test to check once they have run. */
    static final List<Object> SEEN = new CopyOnWriteArrayList<>();

    @RequiresGpu
    @TestMethodOrder(MethodOrderer.OrderAnnotation.class)
    static class TakesEverything {
        private Stream beforeEachStream;

        @BeforeAll
        static void once(CudaContext ctx, Device device) {
            SEEN.add(ctx);
            SEEN.add(device);
        }

        @BeforeEach
        void each(Stream s) {
            beforeEachStream = s;
        }

        @Test
        @Order(1)
        void first(Device device, CudaContext ctx, Stream s, @OnDevice(1) CudaContext second, @OnDevice(1) Stream s1) {
            assertSame(beforeEachStream, s, "one stream per test and device, shared with @BeforeEach");
            assertSame(device, ctx.device());
            assertSame(ctx, s.context());
            assertFalse(s.isClosed());
            assertEquals(1, second.device().ordinal());
            assertSame(second, s1.context());
            SEEN.addAll(List.of(ctx, s, second, s1));
        }

        @Test
        @Order(2)
        void second(CudaContext ctx, Stream s) {
            SEEN.addAll(List.of(ctx, s));
        }
    }

    @RequiresGpu
    static class StreamInBeforeAll {
        @BeforeAll
        static void once(Stream s) {
            s.close();
        }

        @Test
        void never() {
        }
    }

    @Test
    void eachTestGetsTheDevicesContextAndAStreamOfItsOwnThatIsClosedAfterIt() {
        SEEN.clear();
        Simulated sim = SimulatedGpu.use(new Simulated(new FakeDriverApi().deviceCount(2)));
        FixtureRun run = FixtureRun.simulated(TakesEverything.class);
        assertEquals("SUCCESSFUL", run.of("first").status(), () -> run.of("first").toString());
        assertEquals("SUCCESSFUL", run.of("second").status(), () -> run.of("second").toString());

        CudaContext ctx = (CudaContext) SEEN.get(0);
        assertSame(sim.cuda.device(0), SEEN.get(1), "the device is the supplied driver's");
        assertSame(ctx, SEEN.get(2), "@BeforeAll and the tests share the device's context");
        assertSame(ctx, SEEN.get(6));
        assertSame(ctx, sim.cuda.device(0).context(), "the context is the device's own, left open");
        assertTrue(ctx.options().leakTracking(), "opened by the extension, with leak tracking");
        Stream first = (Stream) SEEN.get(3);
        Stream second = (Stream) SEEN.get(7);
        assertNotSame(first, second, "a new stream per test");
        assertTrue(first.isClosed() && second.isClosed() && ((Stream) SEEN.get(5)).isClosed(),
                "the injected streams are closed after their tests");
    }

    @Test
    void aStreamIsRefusedOutsideATestAndSaysWhatToDoInstead() {
        SimulatedGpu.use(new Simulated());
        FixtureRun.Outcome outcome = FixtureRun.simulated(StreamInBeforeAll.class).of("StreamInBeforeAll");
        assertEquals("FAILED", outcome.status());
        assertTrue(outcome.failure().contains("take the CudaContext and create (and close) the stream yourself"),
                outcome.failure());
    }
}
