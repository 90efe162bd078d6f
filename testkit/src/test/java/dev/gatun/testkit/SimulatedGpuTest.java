package dev.gatun.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.ContextOptions;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.OutOfDeviceMemoryException;
import dev.gatun.cuda.testing.Ptx;
import org.junit.jupiter.api.Test;

/** A {@link SimulatedGpu} on its own, without the extension: what its close checks, and its controls. */
class SimulatedGpuTest {

    @Test
    void closeNamesEachOwnerTheTestLeftOpenWithWhereItWasMade() {
        SimulatedGpu gpu = new SimulatedGpu();
        CudaContext ctx = gpu.context();
        DeviceBuffer leaked = ctx.allocate(4096);
        IllegalStateException e = assertThrows(IllegalStateException.class, gpu::close);
        assertTrue(e.getMessage().contains("1 DEVICE_BUFFER"), e.getMessage());
        assertTrue(e.getMessage().contains(leaked.toString()), e.getMessage());
        assertTrue(e.getMessage().contains("at " + SimulatedGpuTest.class.getName()
                + ".closeNamesEachOwnerTheTestLeftOpenWithWhereItWasMade"), e.getMessage());
        leaked.close();
        ctx.close(); // the refused close left the context open
    }

    @Test
    void closeReportsAKernelBodyThatFailedAsTheGpuRanIt() {
        SimulatedGpu gpu = new SimulatedGpu();
        CudaContext ctx = gpu.context();
        try (Kernel touch = gpu.kernel("touch", KernelCode.ptx(Ptx.module("touch", "u64")),
                launch -> launch.memory(launch.pointer(0) + (1 << 20), 4)); // past the end of its buffer
                DeviceBuffer buffer = ctx.allocate(64)) {
            touch.launch(ctx.computeStream(), LaunchConfig.of(1, 1), KernelArg.pointer(buffer));
            ctx.synchronize(); // the launch call itself succeeded, as a faulting kernel's launch does
        }
        IllegalStateException e = assertThrows(IllegalStateException.class, gpu::close);
        assertTrue(e.getMessage().contains("failed as the GPU ran it"), e.getMessage());
        assertTrue(e.getMessage().contains("unallocated device memory"), e.getMessage());
    }

    @Test
    void aMemoryLimitMakesLargerAllocationsRunOut() {
        try (SimulatedGpu gpu = new SimulatedGpu().memoryLimit(1 << 20)) {
            CudaContext ctx = gpu.context();
            try (DeviceBuffer fits = ctx.allocate(1 << 19)) {
                assertThrows(OutOfDeviceMemoryException.class, () -> ctx.allocate(1 << 20));
                assertEquals(1 << 19, fits.byteSize());
            }
        }
    }

    @Test
    void closeIsIdempotentAndEndsTheContextsUse() {
        SimulatedGpu gpu = new SimulatedGpu();
        CudaContext ctx = gpu.context();
        gpu.close();
        gpu.close();
        assertTrue(ctx.isClosed());
        IllegalStateException e = assertThrows(IllegalStateException.class, gpu::context);
        assertTrue(e.getMessage().contains("closed"), e.getMessage());
    }

    @Test
    void contextOptionsAreRefusedOnceTheContextIsOpen() {
        try (SimulatedGpu gpu = new SimulatedGpu()) {
            gpu.context();
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> gpu.contextOptions(ContextOptions.defaults()));
            assertTrue(e.getMessage().contains("already open"), e.getMessage());
        }
    }

    @Test
    void eachSimulatedGpuIsADeviceOfItsOwn() {
        try (SimulatedGpu first = new SimulatedGpu(); SimulatedGpu second = new SimulatedGpu();
                DeviceBuffer a = first.context().allocate(64)) {
            assertEquals(1, first.context().diagnostics().liveOwners(dev.gatun.cuda.OwnerKind.DEVICE_BUFFER));
            assertEquals(0, second.context().diagnostics().liveOwners(dev.gatun.cuda.OwnerKind.DEVICE_BUFFER));
            assertEquals(64, a.byteSize());
        }
    }
}
