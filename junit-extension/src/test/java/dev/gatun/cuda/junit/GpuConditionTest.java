package dev.gatun.cuda.junit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.Device;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.LogCapture;
import dev.gatun.cuda.testing.Simulated;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.slf4j.event.Level;

/** Whether a {@link RequiresGpu} test runs: skipped without a GPU, failed when one is required, run with one. */
class GpuConditionTest {

    @RequiresGpu
    static class NeedsAGpu {
        @Test
        void runs(Device device) {
            assertEquals(0, device.ordinal());
        }
    }

    static class OneTestNeedsAGpu {
        @Test
        @RequiresGpu
        void needsAGpu() {
            fail("ran without a GPU");
        }

        @Test
        void needsNone() {
            assertEquals(4, 2 + 2);
        }
    }

    @RequiresGpu
    static class TakesDeviceOne {
        @Test
        void onTheSecondDevice(@OnDevice(1) Device device) {
            assertEquals(1, device.ordinal());
        }
    }

    @Test
    void withoutAGpuTheClassIsSkippedWithTheLoadersWholeReasonEveryPlaceItTriedIncluded() {
        FixtureRun run = FixtureRun.withoutGpu(NeedsAGpu.class);
        FixtureRun.Outcome outcome = run.of("NeedsAGpu");
        assertEquals("SKIPPED", outcome.status());
        // The skip reason is all a user sees without an SLF4J binding: it names the places tried.
        assertTrue(outcome.reason().startsWith("no CUDA driver/GPU: No CUDA driver could be loaded. Tried: "
                + NoGpu.TRIED + "; GPU tests run only on a GPU host"), outcome.reason());
        LogCapture.expect(Level.WARN, GpuExtension.class, "NeedsAGpu skipped: no CUDA driver/GPU", NoGpu.TRIED);
    }

    @Test
    void withoutAGpuOnlyTheAnnotatedMethodIsSkipped() {
        FixtureRun run = FixtureRun.withoutGpu(OneTestNeedsAGpu.class);
        assertEquals("SKIPPED", run.of("needsAGpu").status());
        assertEquals("SUCCESSFUL", run.of("needsNone").status());
        LogCapture.expect(Level.WARN, GpuExtension.class, "needsAGpu() skipped");
    }

    @Test
    void whenAGpuIsRequiredItsAbsenceFailsWithTheReasonAndGatunsDiagnosis() {
        FixtureRun run = FixtureRun.withoutGpu(NeedsAGpu.class, GpuExtension.REQUIRED_PARAMETER, "true");
        FixtureRun.Outcome outcome = run.of("NeedsAGpu");
        assertEquals("FAILED", outcome.status());
        // JUnit wraps what a condition throws: the extension's failure, with the loader's exception as its cause.
        IllegalStateException failure = assertInstanceOf(IllegalStateException.class, outcome.thrown().getCause());
        assertTrue(failure.getMessage().startsWith("gatun.gpu.required is true, but there is no usable GPU: no CUDA "
                + "driver/GPU: No CUDA driver could be loaded. Tried: " + NoGpu.TRIED), failure.getMessage());
        // The doctor's report of this JVM follows, whole: what a GPU host that lost its GPU needs to see.
        assertTrue(failure.getMessage().contains("Gatun's diagnosis of this JVM (dev.gatun.cuda.doctor.Doctor):\n"
                + "Gatun doctor\ngatun:   "), failure.getMessage());
        assertTrue(failure.getMessage().contains("\nsettings:\n") && failure.getMessage().contains("\nResult: "),
                failure.getMessage());
        CudaUnavailableException e = assertInstanceOf(CudaUnavailableException.class, failure.getCause());
        assertEquals(java.util.List.of(NoGpu.TRIED), e.attempts());
        assertTrue(LogCapture.find(Level.WARN, GpuExtension.class, "skipped").isEmpty(), "a failure is not a skip");
    }

    @Test
    void withAGpuTheTestRuns() {
        SimulatedGpu.use(new Simulated());
        FixtureRun run = FixtureRun.simulated(NeedsAGpu.class, GpuExtension.REQUIRED_PARAMETER, "true");
        assertEquals("SUCCESSFUL", run.of("runs").status(), () -> run.of("runs").toString());
    }

    @Test
    void aDriverWithoutDevicesCountsAsNoGpu() {
        SimulatedGpu.use(new Simulated(new FakeDriverApi().deviceCount(0)));
        FixtureRun.Outcome skipped = FixtureRun.simulated(NeedsAGpu.class).of("NeedsAGpu");
        assertEquals("SKIPPED", skipped.status());
        assertTrue(skipped.reason().contains("reports no device"), skipped.reason());
        LogCapture.expect(Level.WARN, GpuExtension.class, "NeedsAGpu skipped");

        FixtureRun.Outcome failed = FixtureRun.simulated(NeedsAGpu.class, GpuExtension.REQUIRED_PARAMETER, "true")
                .of("NeedsAGpu");
        assertEquals("FAILED", failed.status());
        assertTrue(failed.failure().contains("gatun.gpu.required is true, but there is no usable GPU: the CUDA driver "
                + "(simulated driver) reports no device"), failed.failure());
        assertTrue(failed.failure().contains("Gatun doctor"), failed.failure());
    }

    @Test
    void aTestThatTakesADeviceTheDriverDoesNotReportIsSkipped() {
        SimulatedGpu.use(new Simulated());
        FixtureRun.Outcome one = FixtureRun.simulated(TakesDeviceOne.class).of("onTheSecondDevice");
        assertEquals("SKIPPED", one.status());
        assertEquals("the test takes device 1, but the driver reports 1 device", one.reason());

        SimulatedGpu.use(new Simulated(new FakeDriverApi().deviceCount(2)));
        assertEquals("SUCCESSFUL", FixtureRun.simulated(TakesDeviceOne.class).of("onTheSecondDevice").status());
    }

    @Test
    void aRequiredValueOtherThanTrueOrFalseFailsTheTestsInsteadOfSkippingThem() {
        for (String value : List.of("yes", "1", "")) {
            FixtureRun.Outcome outcome = FixtureRun.withoutGpu(NeedsAGpu.class, GpuExtension.REQUIRED_PARAMETER, value)
                    .of("NeedsAGpu");
            assertEquals("FAILED", outcome.status(), value);
            assertTrue(outcome.failure().contains("gatun.gpu.required is '" + value + "'; set it to true or false"),
                    outcome.failure());
        }
        SimulatedGpu.use(new Simulated());
        FixtureRun.Outcome withAGpu = FixtureRun.simulated(NeedsAGpu.class, GpuExtension.REQUIRED_PARAMETER, "on")
                .of("NeedsAGpu");
        assertEquals("FAILED", withAGpu.status(), "wrong with a GPU too");
        assertTrue(LogCapture.find(Level.WARN, GpuExtension.class, "skipped").isEmpty(), "nothing was skipped");
    }

    /** Not a supplier, with a static initializer that must never run. */
    public static final class NotASupplier {
        static {
            INITIALIZED.set(true);
        }
    }

    static final AtomicBoolean INITIALIZED = new AtomicBoolean();

    @Test
    void aSupplierClassIsCheckedBeforeItsStaticInitializerRuns() {
        FixtureRun.Outcome outcome = FixtureRun.run(NeedsAGpu.class, GpuExtension.CUDA_SUPPLIER_PARAMETER,
                NotASupplier.class.getName()).of("NeedsAGpu");
        assertEquals("FAILED", outcome.status());
        assertTrue(outcome.failure().contains("does not implement java.util.function.Supplier"), outcome.failure());
        assertFalse(INITIALIZED.get(), "the named class was initialized before its type was checked");
    }

    @Test
    void aSupplierThatCannotBeUsedFailsTheTestsAndSaysWhatToName() {
        FixtureRun.Outcome outcome = FixtureRun.run(NeedsAGpu.class, GpuExtension.CUDA_SUPPLIER_PARAMETER,
                "dev.gatun.cuda.junit.NoSuchSupplier").of("NeedsAGpu");
        assertEquals("FAILED", outcome.status());
        assertTrue(outcome.failure().contains("gatun.gpu.cudaSupplier = dev.gatun.cuda.junit.NoSuchSupplier cannot be "
                + "used") && outcome.failure().contains("Supplier<dev.gatun.cuda.Cuda>"), outcome.failure());
    }
}
