package dev.gatun.cuda.junit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.LogCapture;
import dev.gatun.cuda.testing.Simulated;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * A sticky error fails the test that caused it, saying so, and skips the later tests on its
 * device (and those that take no device) instead of failing each of them; other devices go on.
 */
class PoisoningTest {

    private static final int ILLEGAL_ADDRESS = CudaDriver.CUDA_ERROR_ILLEGAL_ADDRESS();
    /** The sticky error the fixture provoked. */
    static final AtomicReference<CudaException> STICKY = new AtomicReference<>();

    /** Makes the next stream synchronize report an illegal address, as after a faulty kernel. */
    static void faultAtNextSynchronize() {
        SimulatedGpu.current().faults.replaceOnce("cuStreamSynchronize", ILLEGAL_ADDRESS);
    }

    @RequiresGpu
    @TestMethodOrder(MethodOrderer.OrderAnnotation.class)
    static class PoisonsDeviceZero {
        @Test
        @Order(1)
        void poisons(Stream s) {
            faultAtNextSynchronize();
            try {
                s.synchronize();
            } catch (CudaException e) {
                STICKY.set(e);
                throw e;
            }
        }

        @Test
        @Order(2)
        void laterOnTheSameDevice(CudaContext ctx) {
            ctx.allocate(16).close();
        }

        @Test
        @Order(3)
        void laterWithoutADevice() {
        }

        @Test
        @Order(4)
        void laterOnAnotherDevice(@OnDevice(1) CudaContext ctx) {
            try (DeviceBuffer b = ctx.allocate(16)) {
                b.bytes().copyFrom(new byte[16]);
            }
        }
    }

    @RequiresGpu
    static class SwallowsTheStickyError {
        @Test
        void catchesIt(Stream s) {
            faultAtNextSynchronize();
            STICKY.set(assertThrows(CudaException.class, s::synchronize));
        }
    }

    @Test
    void theTestThatPoisonsFailsSayingSoAndLaterTestsOnItsDeviceAreSkipped() {
        SimulatedGpu.use(new Simulated(new FakeDriverApi().deviceCount(2)));
        FixtureRun run = FixtureRun.simulated(PoisonsDeviceZero.class);
        LogCapture.expectPoisonedBy(STICKY.get());

        FixtureRun.Outcome poisons = run.of("poisons");
        assertEquals("FAILED", poisons.status());
        assertTrue(poisons.thrown().getMessage().startsWith("device 0's context was poisoned by a sticky error during "
                + "this test: " + STICKY.get().getMessage() + ". Later tests on that device are skipped"), poisons.failure());
        assertSame(STICKY.get(), poisons.thrown().getCause(), "what the test threw is the cause");

        String reason = "device 0's context was poisoned by a sticky error in an earlier test (PoisonsDeviceZero.poisons(Stream)): "
                + STICKY.get().getMessage() + "; only a new process recovers the device";
        assertEquals(new FixtureRun.Outcome("SKIPPED", reason, null), run.of("laterOnTheSameDevice"));
        assertEquals(new FixtureRun.Outcome("SKIPPED", reason, null), run.of("laterWithoutADevice"));
        assertEquals("SUCCESSFUL", run.of("laterOnAnotherDevice").status(), () -> run.of("laterOnAnotherDevice").toString());
    }

    @Test
    void aTestThatSwallowsTheStickyErrorStillFails() {
        SimulatedGpu.use(new Simulated());
        FixtureRun.Outcome outcome = FixtureRun.simulated(SwallowsTheStickyError.class).of("catchesIt");
        LogCapture.expectPoisonedBy(STICKY.get());
        assertEquals("FAILED", outcome.status());
        assertTrue(outcome.thrown().getMessage().startsWith("device 0's context was poisoned by a sticky error during "
                + "this test"), outcome.failure());
        assertSame(STICKY.get(), outcome.thrown().getCause(), "without a thrown exception, the first error is the cause");
    }
}
