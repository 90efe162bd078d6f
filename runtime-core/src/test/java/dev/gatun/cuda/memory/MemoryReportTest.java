package dev.gatun.cuda.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.ContextOptions;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.MemoryPool;
import dev.gatun.cuda.MemoryPoolOptions;
import dev.gatun.cuda.MemoryReport;
import dev.gatun.cuda.OutOfDeviceMemoryException;
import dev.gatun.cuda.OutOfMemoryCounters;
import dev.gatun.cuda.PinnedBuffer;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.testing.Simulated;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The report an allocation that still fails after the out-of-memory ladder carries. In a package
 * outside Gatun's library code, so that this class is the allocation site a report names.
 */
class MemoryReportTest {

    private static final long MiB = 1 << 20;

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.cuda.device(0).context(ContextOptions.defaults().withLeakTracking(true));

    @AfterEach
    void closed() {
        ctx.close();
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void anAllocationThatStillFailsThrowsOneExceptionWhoseReportSaysWhereTheMemoryIs() {
        sim.gpu.memoryLimit(16 * MiB);
        try (DeviceBuffer big = ctx.allocate(6 * MiB); Stream s = ctx.createStream();
                DeviceBuffer ordered = s.allocate(2 * MiB);
                MemoryPool pool = ctx.createMemoryPool(MemoryPoolOptions.defaults().withReleaseThresholdBytes(Long.MAX_VALUE)
                        .withHardCapBytes(64 * MiB));
                DeviceBuffer pooled = pool.allocate(s, 3 * MiB); PinnedBuffer pinned = ctx.allocatePinned(4096)) {
            OutOfDeviceMemoryException e = assertThrows(OutOfDeviceMemoryException.class, () -> s.allocate(8 * MiB));
            assertEquals(CudaDriver.CUDA_ERROR_OUT_OF_MEMORY(), e.result(), "still CUDA_ERROR_OUT_OF_MEMORY for "
                    + "code that catches CudaException and checks the result");
            assertEquals("CUDA_ERROR_OUT_OF_MEMORY", e.resultName());
            assertEquals(8 * MiB, e.requestedBytes());

            MemoryReport r = e.report();
            assertEquals(141L << 30, r.deviceTotalBytes());
            assertEquals(16 * MiB - 6 * MiB - 2 * MiB - 4 * MiB, r.deviceFreeBytes(), "the pool reserves 4 MiB for its 3");
            assertEquals(6 * MiB, r.devicePoolBytes());
            assertEquals(0, r.devicePoolRetainedBytes());
            assertEquals(5 * MiB, r.streamOrderedBytes(), "Stream.allocate's and MemoryPool.allocate's");
            assertEquals(4096, r.pinnedBytes());
            assertEquals(0, r.graphAllocationBytes());
            assertEquals(0, r.growableBytes());
            assertNotNull(r.graphMemory());
            assertEquals(2, r.pools().size(), r.pools() + ": the default pool's view and the created pool");
            MemoryReport.Pool created = r.pools().stream().filter(p -> p.pool().equals(pool.toString())).findFirst()
                    .orElseThrow(() -> new AssertionError(r.pools() + " does not list " + pool));
            assertEquals(new MemoryReport.Pool(pool.toString(), 4 * MiB, 3 * MiB, 3 * MiB, 64 * MiB,
                    MemoryPoolOptions.NO_CAP), created);

            assertEquals(List.of(6 * MiB, 3 * MiB, 2 * MiB, 4096L),
                    r.largestAllocations().stream().map(MemoryReport.Allocation::byteSize).toList(), "largest first");
            MemoryReport.Allocation largest = r.largestAllocations().get(0);
            assertEquals(big.toString(), largest.owner());
            assertEquals(getClass().getName(), largest.caller().getClassName(), "where it was allocated");
            assertTrue(largest.site().size() > 1);

            String message = e.getMessage();
            assertTrue(message.contains("stream-ordered allocation of " + 8 * MiB + " bytes"), message);
            assertTrue(message.contains("memory report"), message);
            assertTrue(message.contains("6.0 MiB: " + big + ", allocated at " + getClass().getName()), message);
            OutOfMemoryCounters c = ctx.diagnostics().outOfMemoryCounters();
            assertEquals(new OutOfMemoryCounters(1, 1, 0, 0, 1, 0, 0, 1, 0, 1, 0), c);
        }
    }

    @Test
    void aReportCanBeTakenAtAnyTime() {
        try (DeviceBuffer b = ctx.allocate(MiB)) {
            MemoryReport r = ctx.diagnostics().memoryReport();
            assertEquals(MiB, r.devicePoolBytes());
            assertEquals((141L << 30) - MiB, r.deviceFreeBytes());
            assertEquals(b.toString(), r.largestAllocations().get(0).owner());
            assertTrue(r.toString().startsWith("memory report:"), r.toString());
        }
    }
}
