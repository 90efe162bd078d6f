package dev.gatun.testkit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.ContextOptions;
import dev.gatun.cuda.ContextPoisonedException;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.DevicePoolOptions;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.OutOfDeviceMemoryException;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Faults injected into the driver calls of a test's context, on whichever target this run has:
 * the chosen call fails with the chosen error, Gatun reports it with its typed exception, and
 * nothing leaks (the GPU's close after each test checks that).
 */
@GpuOrSimulated
class FaultsTest {

    private static final int OUT_OF_MEMORY = CudaDriver.CUDA_ERROR_OUT_OF_MEMORY();

    /**
     * Every allocation reaches the driver: no pool in front. One that runs out climbs the
     * out-of-memory ladder, which with nothing to free tries it once more, after synchronizing.
     */
    private static CudaContext unpooled(GpuUnderTest gpu) {
        return gpu.contextOptions(ContextOptions.defaults().withLeakTracking(true)
                .withDevicePool(new DevicePoolOptions(0, false))).context();
    }

    @Test
    void theNthAllocationFailsWithATypedExceptionAndTheOthersSucceed(GpuUnderTest gpu) {
        CudaContext ctx = unpooled(gpu);
        long seed = System.nanoTime();
        int nth = 1 + new Random(seed).nextInt(5);
        // The nth allocation's first call, and the ladder's retry.
        gpu.faults().failCalls("cuMemAlloc_v2", nth, 2, OUT_OF_MEMORY);
        List<DeviceBuffer> made = new ArrayList<>();
        List<Integer> failed = new ArrayList<>();
        try {
            for (int call = 1; call <= 6; call++) {
                try {
                    made.add(ctx.allocate(4096L * call));
                } catch (OutOfDeviceMemoryException e) {
                    assertEquals(OUT_OF_MEMORY, e.result());
                    assertEquals(4096L * call, e.requestedBytes());
                    failed.add(call);
                }
            }
        } finally {
            made.forEach(DeviceBuffer::close);
        }
        assertEquals(List.of(nth), failed, "seed " + seed);
        assertEquals(7, gpu.faults().calls("cuMemAlloc_v2"), "the failed calls count too");
    }

    @Test
    void aRetryingCallerMeetsTheFaultOnEveryCallTheCountCovers(GpuUnderTest gpu) {
        CudaContext ctx = unpooled(gpu);
        gpu.faults().failCalls("cuMemAlloc_v2", 1, 1, OUT_OF_MEMORY);
        try (DeviceBuffer buffer = ctx.allocate(1 << 20)) {
            assertEquals(1 << 20, buffer.byteSize(), "one failed call: the ladder's retry succeeded");
        }
        assertEquals(1, ctx.diagnostics().outOfMemoryCounters().rescuedBySynchronize());
        gpu.faults().failCalls("cuMemAlloc_v2", 1, 2, OUT_OF_MEMORY);
        OutOfDeviceMemoryException e = assertThrows(OutOfDeviceMemoryException.class, () -> ctx.allocate(1 << 20));
        assertEquals(1 << 20, e.requestedBytes());
        assertEquals(1, ctx.diagnostics().outOfMemoryCounters().failures(), "two failed calls: the retry failed too");
        assertEquals(4, gpu.faults().calls("cuMemAlloc_v2"));
    }

    /** Arguments of {@link KernelTest#AXPY} for out = a * x + out over n floats. */
    private static KernelArg[] axpy(DeviceBuffer out, DeviceBuffer x, float a, int n) {
        return new KernelArg[] {KernelArg.pointer(out), KernelArg.pointer(x), KernelArg.pointer(out), KernelArg.f32(a),
            KernelArg.i32(n)};
    }

    @Test
    void aStickyLaunchErrorPoisonsTheContextAndLaterCallsFailFast(GpuUnderTest gpu) {
        CudaContext ctx = gpu.context();
        try (Kernel axpy = gpu.kernel("axpy", KernelCode.cuda(KernelTest.AXPY), KernelTest::axpy);
                DeviceBuffer buffer = ctx.allocate(4 * 64)) {
            gpu.faults().failCall("cuLaunchKernel", 1, CudaDriver.CUDA_ERROR_LAUNCH_FAILED());
            CudaException launch = assertThrows(CudaException.class,
                    () -> axpy.launch(ctx.computeStream(), LaunchConfig.of(1, 64), axpy(buffer, buffer, 1, 64)));
            assertEquals("CUDA_ERROR_LAUNCH_FAILED", launch.resultName());
            assertEquals(launch, ctx.diagnostics().poisonedBy().orElseThrow());
            ContextPoisonedException later = assertThrows(ContextPoisonedException.class, () -> ctx.allocate(64));
            assertEquals(launch, later.getCause());
        }
    }

    @Test
    void aCallCanRunAndStillReportAFailure(GpuUnderTest gpu) {
        int n = 64;
        float[] x = new float[n];
        Arrays.fill(x, 3f);
        float[] got = new float[n];
        CudaContext ctx = gpu.context();
        try (Kernel axpy = gpu.kernel("axpy", KernelCode.cuda(KernelTest.AXPY), KernelTest::axpy);
                DeviceBuffer dx = ctx.allocate(4L * n); DeviceBuffer out = ctx.allocate(4L * n)) {
            dx.asFloats().copyFrom(x);
            out.asFloats().copyFrom(new float[n]);
            gpu.faults().reportFailureAfter("cuLaunchKernel", 1, CudaDriver.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES());
            CudaException reported = assertThrows(CudaException.class,
                    () -> axpy.launch(ctx.computeStream(), LaunchConfig.of(1, n), axpy(out, dx, 2f, n)));
            assertEquals("CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", reported.resultName());
            assertFalse(ctx.diagnostics().poisonedBy().isPresent(), "not a sticky error");
            out.asFloats().copyTo(got);
        }
        float[] ran = new float[n];
        Arrays.fill(ran, 6f);
        assertArrayEquals(ran, got, "the launch reported as failed ran all the same");
    }

    @Test
    void everyCallFromTheNthOnFailsUntilCleared(GpuUnderTest gpu) {
        CudaContext ctx = gpu.context();
        gpu.faults().failFrom("cuEventCreate", 1, CudaDriver.CUDA_ERROR_INVALID_VALUE());
        for (int i = 0; i < 3; i++) {
            CudaException e = assertThrows(CudaException.class, ctx::createEvent);
            assertEquals("CUDA_ERROR_INVALID_VALUE", e.resultName());
        }
        gpu.faults().clear();
        assertEquals(0, gpu.faults().calls("cuEventCreate"), "clear resets the counts");
        ctx.createEvent().close();
    }

    @Test
    void unknownFunctionsAndResultsAreRefusedWithWhatToWrite(GpuUnderTest gpu) {
        IllegalArgumentException name = assertThrows(IllegalArgumentException.class,
                () -> gpu.faults().failCall("cuMemAlloc", 1, OUT_OF_MEMORY));
        assertTrue(name.getMessage().contains("did you mean cuMemAlloc_v2?"), name.getMessage());
        IllegalArgumentException success = assertThrows(IllegalArgumentException.class,
                () -> gpu.faults().failCall("cuMemAlloc_v2", 1, 0));
        assertTrue(success.getMessage().contains("not CUDA_SUCCESS"), success.getMessage());
        IllegalArgumentException unknown = assertThrows(IllegalArgumentException.class,
                () -> gpu.faults().failCall("cuMemAlloc_v2", 1, 123_456));
        assertTrue(unknown.getMessage().contains("not CUresult 123456"), unknown.getMessage());
        IllegalArgumentException zeroth = assertThrows(IllegalArgumentException.class,
                () -> gpu.faults().failCall("cuMemAlloc_v2", 0, OUT_OF_MEMORY));
        assertTrue(zeroth.getMessage().contains("counted from 1"), zeroth.getMessage());
        assertInstanceOf(IllegalArgumentException.class, assertThrows(RuntimeException.class,
                () -> gpu.faults().failCalls("cuMemAlloc_v2", 1, 0, OUT_OF_MEMORY)));
    }
}
