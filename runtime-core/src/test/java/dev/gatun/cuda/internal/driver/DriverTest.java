package dev.gatun.cuda.internal.driver;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.DriverTooOldException;
import dev.gatun.cuda.testing.FakeDriverApi;
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
    void aFunctionNewerThanTheDriverNamesTheVersionItNeeds() {
        Driver driver = Driver.create(new FakeDriverApi().version(12040).api(), "fake");
        DriverTooOldException e = assertThrows(DriverTooOldException.class,
                () -> driver.require("cuEventElapsedTime_v2", 12080));
        assertEquals(12080, e.requiredVersion());
        assertEquals(12040, e.installedVersion());
        assertTrue(e.getMessage().contains("CUDA 12.8 or newer"), e.getMessage());
        assertTrue(e.getMessage().contains("supports CUDA 12.4"), e.getMessage());
        driver.require("cuLaunchKernelEx", 11080);
    }

    @Test
    void aMissingSymbolIsReportedEvenWhenTheVersionSuffices() {
        Driver driver = Driver.create(new FakeDriverApi().withoutSymbol("cuFuncGetParamInfo").api(), "/lib/libcuda.so.1");
        DriverTooOldException e = assertThrows(DriverTooOldException.class,
                () -> driver.require("cuFuncGetParamInfo", 12040));
        assertTrue(e.getMessage().contains("does not export it"), e.getMessage());
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
