package dev.gatun.cuda.internal.driver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.DriverTooOldException;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.FaultInjection;
import dev.gatun.cuda.testing.FaultPlan;
import org.junit.jupiter.api.Test;

class DriverTest {

    @Test
    void aFailedCuInitMakesTheDriverUnavailableWithTheReason() {
        FakeDriverApi fake = new FakeDriverApi().initResult(100);
        CudaUnavailableException e = assertThrows(CudaUnavailableException.class, () -> Driver.create(fake.api(), "/x/libcuda.so.1"));
        assertTrue(e.getMessage().contains("cuInit failed: CUDA_ERROR_NO_DEVICE (100)"), e.getMessage());
        assertTrue(e.getMessage().contains("/x/libcuda.so.1"), e.getMessage());
    }

    @Test
    void aDriverOlderThanTheBaselineIsUnavailable() {
        FakeDriverApi fake = new FakeDriverApi().version(11080);
        CudaUnavailableException e = assertThrows(CudaUnavailableException.class, () -> Driver.create(fake.api(), "old"));
        assertTrue(e.getMessage().contains("supports CUDA 11.8; Gatun needs a driver for CUDA 12.0"), e.getMessage());
    }

    @Test
    void aFeatureNewerThanTheDriverNamesItselfTheVersionItNeedsAndTheVersionPresent() {
        FaultPlan plan = new FaultPlan().countCalls();
        Driver driver = Driver.create(FaultInjection.around(new FakeDriverApi().version(12040).api(), plan), "fake");
        int before = plan.totalCalls();
        DriverTooOldException e = assertThrows(DriverTooOldException.class,
                () -> driver.require(DriverFeature.GREEN_CONTEXTS));
        assertEquals("green contexts", e.feature());
        assertEquals("cuGreenCtxStreamCreate", e.function(), "the first of its functions newer than the driver");
        assertEquals(12050, e.requiredVersion());
        assertEquals(12040, e.installedVersion());
        assertEquals("cuGreenCtxStreamCreate (green contexts) needs a CUDA driver for CUDA 12.5 or newer; the "
                + "installed driver supports CUDA 12.4. Update the NVIDIA driver.", e.getMessage());
        assertEquals(before, plan.totalCalls(), "a version check: the driver is not asked");
        assertFalse(driver.supports(DriverFeature.GREEN_CONTEXTS));
        driver.require(DriverFeature.PARAMETER_INFO);
        assertTrue(driver.supports(DriverFeature.PARAMETER_INFO));
    }

    @Test
    void aFeatureNeedingMoreThanItsFunctionsNamesWhatItNeeds() {
        Driver driver = Driver.create(new FakeDriverApi().version(12040).api(), "fake");
        DriverTooOldException e = assertThrows(DriverTooOldException.class,
                () -> driver.require(DriverFeature.GPU_COREDUMPS));
        assertEquals("CU_COREDUMP_GENERATION_FLAGS", e.function());
        assertEquals(12050, e.requiredVersion());
    }

    @Test
    void aFunctionTheDriverLacksIsReportedEvenWhenTheVersionSufficesAndAskedForOnlyUntilFound() {
        FaultPlan plan = new FaultPlan().countCalls();
        FakeDriverApi fake = new FakeDriverApi().withoutSymbol("cuFuncGetParamInfo");
        Driver driver = Driver.create(FaultInjection.around(fake.api(), plan), "/lib/libcuda.so.1");
        int before = plan.calls("cuGetProcAddress_v2"); // the driver's error log was looked for
        DriverTooOldException e = assertThrows(DriverTooOldException.class,
                () -> driver.require(DriverFeature.PARAMETER_INFO));
        assertTrue(e.getMessage().contains("the driver does not have it: cuGetProcAddress_v2(\"cuFuncGetParamInfo\", "
                + "12040) answered CUDA_ERROR_NOT_FOUND at /lib/libcuda.so.1"), e.getMessage());
        assertFalse(driver.supports(DriverFeature.PARAMETER_INFO));
        int asked = plan.calls("cuGetProcAddress_v2");
        assertEquals(before + 2, asked, "a function not found is asked for again");
        driver.require(DriverFeature.EVENTS);
        driver.require(DriverFeature.EVENTS);
        assertEquals(asked + DriverFeature.EVENTS.entryPoints().size(), plan.calls("cuGetProcAddress_v2"),
                "a function found is asked for once");
    }

    @Test
    void errorsCarryTheResultNameNumberDescriptionAndOperation() {
        Driver driver = Driver.create(new FakeDriverApi().api(), "fake");
        CudaException e = assertThrows(CudaException.class, () -> driver.check(2, "cuMemAlloc(1 GiB)", 0));
        assertEquals(2, e.result());
        assertEquals("CUDA_ERROR_OUT_OF_MEMORY", e.resultName());
        assertEquals("simulated driver error 2", e.description());
        assertEquals("cuMemAlloc(1 GiB)", e.operation());
        assertEquals(0, e.device().getAsInt());
        assertEquals("cuMemAlloc(1 GiB) failed: CUDA_ERROR_OUT_OF_MEMORY (2): simulated driver error 2 [device 0]",
                e.getMessage());
        driver.check(0, "never fails", 0);
    }

    @Test
    void resultNamesComeFromTheGeneratedConstantsWithoutADriver() {
        assertEquals("CUDA_SUCCESS", CuResults.name(0));
        assertEquals("CUDA_ERROR_ILLEGAL_ADDRESS", CuResults.name(700));
        assertEquals("CUresult 123456", CuResults.name(123456));
        assertTrue(CuResults.isSticky(700));
        assertTrue(CuResults.isSticky(719));
        assertTrue(CuResults.isSticky(214));
        assertFalse(CuResults.isSticky(2), "out of memory does not poison a context");
        assertFalse(CuResults.isSticky(CuResults.NOT_READY));
    }
}
