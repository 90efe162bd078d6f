package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.MemoryAccess;
import dev.gatun.cuda.MemoryPool;
import dev.gatun.cuda.MemoryPoolCounters;
import dev.gatun.cuda.MemoryPoolOptions;
import dev.gatun.cuda.MemoryUsage;
import dev.gatun.cuda.PoolReuse;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.junit.RequiresGpu;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * CUDA memory pools on a real device: allocations from a pool carry copies and fills that match
 * the CPU's results (outputs poisoned first), the driver's usage counters move with them, and a
 * trim gives reserved memory back.
 */
@RequiresGpu
class MemoryPoolGpuTest {

    private static final long MiB = 1 << 20;
    private static final int POISON = 0x5A5A5A5A;

    @Test
    void poolAllocationsCarryCopiesAndFillsAndMoveTheUsageCounters() {
        long seed = Gpu.seed();
        Random random = Gpu.random(seed);
        int n = (1 << 20) + 3 + random.nextInt(1000); // a little over 4 MiB of ints
        int[] data = random.ints(n).toArray();
        int fillValue = random.nextInt();
        String why = "n=" + n + " seed=" + seed;
        long bytes = 4L * n;

        CudaContext ctx = Gpu.context();
        MemoryPool pool = ctx.createMemoryPool(MemoryPoolOptions.defaults().withReleaseThresholdBytes(256 * MiB));
        Stream s = ctx.createStream();
        try {
            assertEquals(256 * MiB, pool.releaseThresholdBytes());
            assertEquals(0, pool.usage().usedBytes(), "a new pool: " + pool.usage());

            DeviceBuffer a = pool.allocate(s, bytes);
            DeviceBuffer b = pool.allocate(s, bytes);
            DeviceBuffer c = pool.allocate(s, bytes);
            MemoryUsage live = pool.usage();
            assertTrue(live.usedBytes() >= 3 * bytes, "used " + live + " " + why);
            assertTrue(live.reservedBytes() >= live.usedBytes(), "reserved covers used: " + live);
            assertTrue(live.peakUsedBytes() >= live.usedBytes() && live.peakReservedBytes() >= live.reservedBytes(),
                    "high-water marks: " + live);
            assertEquals(new MemoryPoolCounters(3, 0, 3 * bytes), pool.counters());

            // copy: host -> a (synchronous), a -> b on the stream, into a poisoned b
            s.fill(a.asInts(), POISON);
            s.fill(b.asInts(), POISON);
            a.asInts().copyFrom(data);
            s.copy(b.asInts(), a.asInts());
            // fill: c, poisoned first, filled with a random word
            s.fill(c.asInts(), POISON);
            s.fill(c.asInts(), fillValue);
            s.synchronize();

            int[] back = new int[n];
            Arrays.fill(back, POISON);
            b.asInts().copyTo(back);
            assertArrayEquals(data, back, "a -> b through pool memory " + why);
            int[] filled = new int[n];
            Arrays.fill(filled, fillValue);
            Arrays.fill(back, POISON);
            c.asInts().copyTo(back);
            assertArrayEquals(filled, back, "fill of pool memory " + why);

            a.close();
            b.close();
            c.close();
            // Each buffer was used on s and on the context's copy stream (the synchronous copies),
            // so retirement frees it, in the copy stream's order, once both fences completed: the
            // context synchronize completes them and reaps, which queues the frees; then wait for those.
            ctx.synchronize();
            ctx.copyStream().synchronize();
            MemoryUsage freed = pool.usage();
            assertEquals(0, freed.usedBytes(), "every allocation freed: " + freed);
            assertEquals(new MemoryPoolCounters(3, 3, 0), pool.counters());
            assertTrue(freed.reservedBytes() > 0, "the release threshold keeps freed memory reserved: " + freed);

            pool.trimTo(0);
            MemoryUsage trimmed = pool.usage();
            assertTrue(trimmed.reservedBytes() < freed.reservedBytes(), "trim gives memory back: " + freed + " -> "
                    + trimmed);
            pool.resetPeaks();
            MemoryUsage reset = pool.usage();
            assertEquals(reset.usedBytes(), reset.peakUsedBytes(), "the used high-water mark reset: " + reset);
            assertEquals(reset.reservedBytes(), reset.peakReservedBytes(), "the reserved high-water mark reset: " + reset);
        } finally {
            s.close();
            pool.close();
        }
    }

    @Test
    void attributesReadBackAsSet() {
        CudaContext ctx = Gpu.context();
        try (MemoryPool pool = ctx.createMemoryPool(MemoryPoolOptions.defaults()
                .withReuse(PoolReuse.ALLOW_INTERNAL_DEPENDENCIES, false))) {
            assertFalse(pool.isReuseEnabled(PoolReuse.ALLOW_INTERNAL_DEPENDENCIES));
            assertTrue(pool.isReuseEnabled(PoolReuse.FOLLOW_EVENT_DEPENDENCIES));
            assertTrue(pool.isReuseEnabled(PoolReuse.ALLOW_OPPORTUNISTIC));
            pool.setReuseEnabled(PoolReuse.ALLOW_OPPORTUNISTIC, false);
            assertFalse(pool.isReuseEnabled(PoolReuse.ALLOW_OPPORTUNISTIC));
            pool.setReleaseThresholdBytes(Long.MAX_VALUE);
            assertEquals(Long.MAX_VALUE, pool.releaseThresholdBytes());
            assertEquals(MemoryAccess.READ_WRITE, pool.access(ctx), "its own device");
        }
    }

    @Test
    void streamOrderedAllocationsComeFromTheDefaultPool() {
        CudaContext ctx = Gpu.context();
        MemoryPool pool = ctx.defaultMemoryPool();
        Stream s = ctx.createStream();
        try {
            long before = pool.usage().usedBytes();
            try (DeviceBuffer b = s.allocate(8 * MiB)) {
                assertTrue(pool.usage().usedBytes() >= before + 8 * MiB,
                        "Stream.allocate uses the device's default pool: " + pool.usage() + ", before " + before);
            }
        } finally {
            s.close();
        }
    }
}
