package dev.gatun.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.DeviceBuffer;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.platform.engine.discovery.DiscoverySelectors;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;
import org.junit.platform.launcher.listeners.SummaryGeneratingListener;
import org.junit.platform.launcher.listeners.TestExecutionSummary;

/**
 * The extension, on fixture classes (static nested classes, which Surefire leaves alone) run
 * through a launcher of this test's own with a chosen {@value TestTarget#SETTING}.
 */
class GpuOrSimulatedExtensionTest {

    /** The GPUs the fixtures' tests were given, in the order they ran. */
    static final List<GpuUnderTest> SEEN = new CopyOnWriteArrayList<>();

    @GpuOrSimulated
    static class TakesAGpu {
        private GpuUnderTest fromBeforeEach;

        @BeforeEach
        void before(GpuUnderTest gpu) {
            fromBeforeEach = gpu;
        }

        @Test
        void one(GpuUnderTest gpu) {
            assertSame(fromBeforeEach, gpu, "the test and its @BeforeEach share one GPU");
            SEEN.add(gpu);
        }

        @Test
        void two(GpuUnderTest gpu) {
            assertSame(fromBeforeEach, gpu, "the test and its @BeforeEach share one GPU");
            SEEN.add(gpu);
        }
    }

    @GpuOrSimulated
    static class TakesASimulatedGpu {
        @Test
        void controls(SimulatedGpu gpu) {
            SEEN.add(gpu.memoryLimit(1 << 20));
        }
    }

    @GpuOrSimulated
    static class Leaks {
        @Test
        void leavesABufferOpen(GpuUnderTest gpu) {
            SEEN.add(gpu);
            gpu.context().allocate(4096);
        }
    }

    @GpuOrSimulated
    static class TakesAGpuInBeforeAll {
        @BeforeAll
        static void all(GpuUnderTest gpu) {
            SEEN.add(gpu);
        }

        @Test
        void test() {
            SEEN.add(null);
        }
    }

    private static TestExecutionSummary run(Class<?> fixture, String target) {
        SEEN.clear();
        SummaryGeneratingListener listener = new SummaryGeneratingListener();
        LauncherFactory.create().execute(LauncherDiscoveryRequestBuilder.request()
                .selectors(DiscoverySelectors.selectClass(fixture))
                .configurationParameters(target == null ? Map.of() : Map.of(TestTarget.SETTING, target))
                .build(), listener);
        return listener.getSummary();
    }

    /** Every failure's message, with those of its causes and suppressed exceptions. */
    private static String failures(TestExecutionSummary summary) {
        return summary.getFailures().stream().map(f -> messages(f.getException())).collect(Collectors.joining("\n"));
    }

    private static String messages(Throwable t) {
        StringBuilder all = new StringBuilder(String.valueOf(t));
        for (Throwable s : t.getSuppressed()) {
            all.append('\n').append(messages(s));
        }
        return t.getCause() == null ? all.toString() : all.append('\n').append(messages(t.getCause())).toString();
    }

    @Test
    void simulatedGivesEachTestASimulatedGpuOfItsOwnClosedAfterIt() {
        TestExecutionSummary summary = run(TakesAGpu.class, "simulated");
        assertEquals(2, summary.getTestsSucceededCount(), failures(summary));
        assertEquals(2, SEEN.size());
        assertNotSame(SEEN.get(0), SEEN.get(1));
        for (GpuUnderTest gpu : SEEN) {
            assertTrue(gpu instanceof SimulatedGpu, gpu.toString());
            assertThrows(IllegalStateException.class, gpu::context, "closed after its test");
        }
    }

    @Test
    void autoRunsOnTheSimulatorExactlyWhenGatunFindsNoGpu() {
        TestExecutionSummary summary = run(TakesAGpu.class, null);
        assertEquals(2, summary.getTestsSucceededCount(), failures(summary));
        boolean gpu = TestTarget.gpuPresent();
        for (GpuUnderTest seen : SEEN) {
            assertEquals(!gpu, seen.isSimulated(), seen + " where a GPU is " + (gpu ? "" : "not ") + "present");
        }
    }

    @Test
    void gpuFailsWithTheLoadersReasonWhereThereIsNoGpu() {
        TestExecutionSummary summary = run(TakesAGpu.class, "gpu");
        if (TestTarget.gpuPresent()) {
            assertEquals(2, summary.getTestsSucceededCount(), failures(summary));
            assertTrue(SEEN.stream().noneMatch(GpuUnderTest::isSimulated));
        } else {
            assertEquals(2, summary.getTestsFailedCount());
            assertTrue(failures(summary).contains("gatun.testkit.target is gpu, but there is no usable GPU: "),
                    failures(summary));
        }
    }

    @Test
    void aWrongSettingFailsEveryTestNamingTheSetting() {
        TestExecutionSummary summary = run(TakesAGpu.class, "gpus");
        assertEquals(2, summary.getTestsFailedCount());
        assertTrue(failures(summary).contains("gatun.testkit.target is 'gpus'; set it to simulated, gpu, auto (any "
                + "case), or leave it unset for auto"), failures(summary));
        assertEquals(List.of(), SEEN, "no test ran");
    }

    @Test
    void aSimulatedGpuParameterGetsTheSimulatorWhateverTheTarget() {
        TestExecutionSummary summary = run(TakesASimulatedGpu.class, "gpu");
        assertEquals(1, summary.getTestsSucceededCount(), failures(summary));
        assertTrue(SEEN.getFirst().isSimulated());
    }

    @Test
    void aTestThatLeavesAnOwnerOpenFailsNamingItAndWhereItWasMade() {
        TestExecutionSummary summary = run(Leaks.class, "simulated");
        assertEquals(1, summary.getTestsFailedCount());
        String failure = failures(summary);
        assertTrue(failure.contains("owners made from it are open (1 DEVICE_BUFFER)"), failure);
        assertTrue(failure.contains("at " + Leaks.class.getName() + ".leavesABufferOpen"), failure);
    }

    @Test
    void aGpuIsRefusedOutsideATest() {
        TestExecutionSummary summary = run(TakesAGpuInBeforeAll.class, "simulated");
        assertTrue(failures(summary).contains("a GpuUnderTest belongs to one test"), failures(summary));
        assertEquals(List.of(), SEEN, "neither @BeforeAll nor the test ran");
    }
}
