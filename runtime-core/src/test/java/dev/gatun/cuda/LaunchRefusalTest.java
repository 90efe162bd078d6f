package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.testing.LogCapture;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A launch the driver refuses although Gatun's checks let it through is restated with what
 * explains it: the kernel's attributes, the launch's configuration and the occupancy verdict.
 */
class LaunchRefusalTest {

    private static final int OUT_OF_RESOURCES = CudaDriver.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES();

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();
    private final Stream stream = ctx.createStream();
    private final DeviceBuffer buffer = ctx.allocate(256);
    private final Kernel kernel;

    LaunchRefusalTest() {
        ctx.modules().load("m", ModuleImage.ptx("store.ptx", Ptx.module("store", "u64", "u32")));
        kernel = ctx.modules().kernel("m", "store");
    }

    @AfterEach
    void close() {
        if (ctx.diagnostics().poisonedBy().isEmpty()) {
            stream.synchronize();
        }
        kernel.close();
        buffer.close();
        stream.close();
    }

    @Test
    void aBlockTooLargeForTheKernelsRegistersIsRefusedAtPrepareNamingThemAndTheLimit() {
        sim.gpu.registersPerThread("heavy", 96);
        ctx.modules().load("h", ModuleImage.ptx("heavy.ptx", Ptx.module("heavy", "u64", "u32")));
        Kernel heavy = ctx.modules().kernel("h", "heavy");
        try {
            assertEquals(672, heavy.attributes().maxThreadsPerBlock());
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> heavy.prepare(LaunchConfig.of(1, 1024), KernelArg.pointer(buffer), KernelArg.i32(7)));
            assertTrue(e.getMessage().contains("a block of 1024 threads is more than the 672 this kernel can run per block: "
                    + "it uses 96 registers per thread"), e.getMessage());
            assertTrue(e.getMessage().contains("__launch_bounds__(1024)"), e.getMessage());
        } finally {
            heavy.close();
        }
    }

    private KernelLaunch launch(int blockThreads) {
        return kernel.prepare(LaunchConfig.of(2, blockThreads), KernelArg.pointer(buffer), KernelArg.i32(7));
    }

    @Test
    void aRefusedLaunchNamesTheKernelsLimitsTheConfigurationAndTheOccupancy() {
        KernelLaunch l = launch(512);
        sim.faults.replaceOnce("cuLaunchKernel", OUT_OF_RESOURCES);
        LaunchRefusedException e = assertThrows(LaunchRefusedException.class, () -> l.launch(stream));

        assertEquals(OUT_OF_RESOURCES, e.result(), "the driver's result, unchanged");
        assertEquals(32, e.attributes().registersPerThread());
        assertEquals(1024, e.attributes().maxThreadsPerBlock());
        assertEquals(512, e.config().blockX());
        assertEquals(4, e.blocksPerMultiprocessor(), "the simulated driver's verdict: 2048 threads per multiprocessor");
        String message = e.getMessage();
        for (String phrase : new String[] {"kernel 'store'", "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
                "32 registers per thread", "at most 1024 threads per block", "grid (2, 1, 1)",
                "block (512, 1, 1) = 512 threads", "4 block(s) of this size fit on a multiprocessor"}) {
            assertTrue(message.contains(phrase), () -> "'" + phrase + "' missing from: " + message);
        }
        assertInstanceOf(CudaException.class, e.getCause(), "the driver's refusal is the cause");
    }

    @Test
    void theLaunchAttributesAreNamedToo() {
        KernelLaunch l = kernel.prepare(LaunchConfig.of(2, 64).withProgrammaticStreamSerialization(true).withPriority(-1),
                KernelArg.pointer(buffer), KernelArg.i32(7));
        sim.faults.replaceOnce("cuLaunchKernelEx", CudaDriver.CUDA_ERROR_INVALID_VALUE());
        LaunchRefusedException e = assertThrows(LaunchRefusedException.class, () -> l.launch(stream));
        assertTrue(e.getMessage().contains("programmatic stream serialization, priority -1"), e.getMessage());
    }

    @Test
    void whenNoBlockFitsTheMessageSaysWhatToShrink() {
        KernelLaunch l = launch(256);
        sim.faults.replaceOnce("cuLaunchKernel", OUT_OF_RESOURCES);
        sim.faults.replaceOnce("cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", CudaDriver.CUDA_ERROR_INVALID_VALUE());
        LaunchRefusedException unknown = assertThrows(LaunchRefusedException.class, () -> l.launch(stream));
        assertEquals(LaunchRefusedException.UNKNOWN, unknown.blocksPerMultiprocessor());
        assertEquals(1, unknown.getCause().getSuppressed().length, "the occupancy query's own failure is kept");
        assertTrue(unknown.getMessage().contains("could not say how many blocks"), unknown.getMessage());

        LaunchRefusedException none = new LaunchRefusedException((CudaException) unknown.getCause(),
                unknown.attributes(), unknown.config(), 0);
        assertTrue(none.getMessage().contains("No block of this size fits on a multiprocessor: use fewer threads per "
                + "block, less dynamic shared memory, or fewer registers per thread"), none.getMessage());
    }

    @Test
    void aStickyErrorIsNotRestated() {
        KernelLaunch l = launch(64);
        sim.faults.replaceOnce("cuLaunchKernel", CudaDriver.CUDA_ERROR_ILLEGAL_ADDRESS());
        CudaException e = assertThrows(CudaException.class, () -> l.launch(stream));
        assertEquals(CudaException.class, e.getClass(), "the context is poisoned: nothing more is asked of the driver");
        assertTrue(ctx.diagnostics().poisonedBy().isPresent());
        LogCapture.expectPoisonedBy(ctx.diagnostics().poisonedBy().orElseThrow());
    }
}
