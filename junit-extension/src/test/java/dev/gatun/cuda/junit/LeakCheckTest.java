package dev.gatun.cuda.junit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.ModuleImage;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** After each test, owners of its injected context live beyond the baseline fail it, named with where they were made. */
class LeakCheckTest {

    /** What the fixtures leaked on purpose, by test, closed by the test afterwards. */
    static final Map<String, AutoCloseable> LEAKED = new ConcurrentHashMap<>();

    @RequiresGpu
    static class Leaks {
        private static DeviceBuffer keptForTheClass;

        @BeforeAll
        static void before(CudaContext ctx) {
            keptForTheClass = ctx.allocate(32); // made before any test's baseline: not a leak
        }

        @AfterAll
        static void after() {
            keptForTheClass.close();
        }

        @Test
        void leaksABuffer(CudaContext ctx) {
            DeviceBuffer b = ctx.allocate(64);
            LEAKED.put("leaksABuffer", b); // reachable, so the Cleaner does not close it first
        }

        @Test
        void leaksAStreamItMadeFromTheInjectedOne(Stream s) {
            LEAKED.put("leaksAStream", s.context().createStream());
        }

        @Test
        void closesWhatItMakes(CudaContext ctx, Stream s) {
            try (DeviceBuffer b = ctx.allocate(64)) {
                s.memset(b.bytes(), (byte) 7);
            }
        }

        @Test
        void closesAKernelWhoseModuleItUnloaded(CudaContext ctx) {
            ctx.modules().load("m", ModuleImage.ptx("k.ptx", Ptx.module("k", "u64")));
            try (Kernel _ = ctx.modules().kernel("m", "k")) {
                ctx.modules().unload("m"); // the kernel holds the module until the kernel is retired
            }
        }

        @Test
        void leavesAModuleInTheRegistry(CudaContext ctx) {
            ctx.modules().load("left", ModuleImage.ptx("k.ptx", Ptx.module("k", "u64")));
        }
    }

    @Test
    void aLeakFailsTheTestAndNamesTheOwnerWithWhereItWasMade() throws Exception {
        LEAKED.clear();
        Simulated sim = SimulatedGpu.use(new Simulated());
        FixtureRun run = FixtureRun.simulated(Leaks.class);
        try {
            FixtureRun.Outcome buffer = run.of("leaksABuffer");
            assertEquals("FAILED", buffer.status());
            String leaked = LEAKED.get("leaksABuffer").toString();
            String message = buffer.thrown().getMessage();
            assertTrue(message.startsWith("the test left 1 owner of device 0's context open; close them "
                    + "(try-with-resources):\n  " + leaked + ", created\n      at " + Leaks.class.getName()
                    + ".leaksABuffer(LeakCheckTest.java:"), message);
            assertFalse(message.contains("dev.gatun.cuda.CudaContext.allocate"), "Gatun's own frames are left out: "
                    + message);

            FixtureRun.Outcome stream = run.of("leaksAStreamItMadeFromTheInjectedOne");
            assertEquals("FAILED", stream.status());
            assertTrue(stream.thrown().getMessage().contains("1 owner") && stream.thrown().getMessage()
                    .contains(LEAKED.get("leaksAStream") + ", created"), stream.failure());

            FixtureRun.Outcome module = run.of("leavesAModuleInTheRegistry");
            assertEquals("FAILED", module.status());
            assertTrue(module.thrown().getMessage().contains("Module#") && module.thrown().getMessage()
                    .contains("'left'"), module.failure());

            assertEquals("SUCCESSFUL", run.of("closesWhatItMakes").status(), () -> run.of("closesWhatItMakes").toString());
            assertEquals("SUCCESSFUL", run.of("closesAKernelWhoseModuleItUnloaded").status(),
                    () -> run.of("closesAKernelWhoseModuleItUnloaded").toString());
            assertEquals("SUCCESSFUL", run.of("Leaks").status(), "@BeforeAll's buffer, closed in @AfterAll, is no leak");
        } finally {
            for (AutoCloseable c : LEAKED.values()) {
                c.close();
            }
            sim.cuda.device(0).context().modules().unload("left");
        }
    }

    @Test
    void withoutLeakTrackingALeakIsCountedByKindAndTheMessageSaysHowToNameIt() throws Exception {
        LEAKED.clear();
        Simulated sim = SimulatedGpu.use(new Simulated());
        sim.context(); // opened before the extension, without leak tracking
        FixtureRun.Outcome buffer = FixtureRun.simulated(Leaks.class).of("leaksABuffer");
        try {
            assertEquals("FAILED", buffer.status());
            assertTrue(buffer.thrown().getMessage().startsWith("the test left 1 DEVICE_BUFFER of device 0's context open"),
                    buffer.failure());
            assertTrue(buffer.thrown().getMessage().contains("-Dgatun.leakTracking=true"), buffer.failure());
        } finally {
            for (AutoCloseable c : LEAKED.values()) {
                c.close();
            }
            sim.cuda.device(0).context().modules().unload("left");
        }
    }
}
