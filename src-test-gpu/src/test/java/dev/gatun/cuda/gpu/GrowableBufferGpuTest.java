package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.GrowableBuffer;
import dev.gatun.cuda.GrowableBufferCounters;
import dev.gatun.cuda.GrowableBufferOptions;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.MemoryInfo;
import dev.gatun.cuda.ReservationExceededException;
import dev.gatun.cuda.junit.RequiresGpu;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;

/**
 * A growable buffer (virtual memory management) on a real device: grown in several steps, each
 * step's whole mapped range uploaded in one copy, transformed by one kernel over one pointer, and
 * compared with the CPU (outputs poisoned first); the base address never moves; a shrink keeps
 * the bytes below it; closing returns every mapped byte.
 */
@RequiresGpu
class GrowableBufferGpuTest {

    private static final long MiB = 1 << 20;
    private static final int POISON = 0x5A5A5A5A;
    /**
     * x[i] = x[i] * 3 + i over n 32-bit words, in place, wrapping as Java's int arithmetic does
     * (unsigned in C, where signed overflow is undefined); a grid-stride loop, so any size fits
     * one launch.
     */
    private static final String AFFINE = """
            extern "C" __global__ void affine(unsigned int* x, long long n) {
                for (long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x; i < n;
                        i += (long long) gridDim.x * blockDim.x) {
                    x[i] = x[i] * 3u + (unsigned int) i;
                }
            }
            """;

    @Test
    @Tag(GpuTags.MEASURES_DEVICE_MEMORY) // its last check reads the device's free memory
    void growsInStepsAsOneRangeShrinksKeepingItsBytesAndGivesEverythingBack(TestReporter reporter) {
        long seed = Gpu.seed();
        Random random = Gpu.random(seed);
        CudaContext ctx = Gpu.context();
        MemoryInfo before = ctx.diagnostics().memoryInfo();
        GrowableBuffer g = ctx.reserveGrowable(GrowableBufferOptions.exactly(1L << 30));
        try (Kernel affine = Gpu.kernel(AFFINE, "affine")) {
            long chunk = g.chunkBytes();
            long base = g.baseAddress();
            reporter.publishEntry("chunk", chunk + " bytes (recommended granularity)");
            int[] expected = new int[0];
            // Odd sizes: each step ends inside a chunk, and the last crosses many.
            long[] steps = {3 * MiB + 4 * random.nextInt(1000), 17 * MiB + 4 * random.nextInt(1000),
                    64 * MiB + 4 * random.nextInt(1000), 160 * MiB + 4 * random.nextInt(1000)};
            for (long size : steps) {
                g.grow(size);
                String why = "size " + size + " seed " + seed;
                assertEquals(base, g.baseAddress(), "the base never moves: " + why);
                DeviceBuffer whole = g.mapped();
                assertEquals(size, whole.byteSize());
                int n = (int) (size / 4);
                whole.asInts().copyFrom(poison(n)); // poisoned first, so bytes the upload misses show
                int[] data = random.ints(n).toArray();
                whole.asInts().copyFrom(data); // one copy across every chunk
                affine.prepare(LaunchConfig.of(1024, 256), KernelArg.pointer(whole), KernelArg.i64(n))
                        .launch(ctx.computeStream()); // one kernel, one pointer
                expected = new int[n];
                for (int i = 0; i < n; i++) {
                    expected[i] = data[i] * 3 + i;
                }
                int[] back = poison(n);
                whole.asInts().copyTo(back);
                assertArrayEquals(expected, back, why);
                GrowableBufferCounters c = g.counters();
                assertEquals((size + chunk - 1) / chunk, c.mappedChunks(), why);
                assertEquals(c.mappedChunks() * chunk, c.mappedBytes(), why);
            }
            assertThrows(ReservationExceededException.class, () -> g.grow(g.reservedBytes() + 1));

            long kept = 40 * MiB + 4 * random.nextInt(1000);
            g.shrink(kept);
            assertEquals(base, g.baseAddress());
            assertEquals((kept + chunk - 1) / chunk, g.counters().mappedChunks());
            int[] back = poison((int) (kept / 4));
            g.mapped().asInts().copyTo(back);
            assertArrayEquals(Arrays.copyOf(expected, back.length), back, "the bytes below the shrink, seed " + seed);
            reporter.publishEntry("mapped high-water", g.counters().peakMappedBytes() + " bytes");
        } finally {
            g.close();
        }
        ctx.synchronize(); // completes every fence and reaps: the buffer's retirement unmaps and releases
        ctx.reap(); // the views' retirements let go of the buffer in the first round; its own may need this one
        assertEquals(0, g.counters().mappedBytes(), "every chunk unmapped and released: " + g.counters());
        MemoryInfo after = ctx.diagnostics().memoryInfo();
        reporter.publishEntry("free memory", "before " + before.freeBytes() + ", after close " + after.freeBytes());
        assertTrue(after.freeBytes() >= before.freeBytes() - 64 * MiB,
                "the mapped chunks came back: free " + before.freeBytes() + " -> " + after.freeBytes());
    }

    @Test
    void theDefaultReservationCoversTheDevice() {
        CudaContext ctx = Gpu.context();
        try (GrowableBuffer g = ctx.reserveGrowable(GrowableBufferOptions.defaults())) {
            long total = ctx.device().totalMemoryBytes();
            long wholeChunks = (total + g.chunkBytes() - 1) / g.chunkBytes() * g.chunkBytes();
            assertEquals(wholeChunks, g.reservedBytes(), "the device's total memory, in whole chunks, on a 64-bit "
                    + "address space that is not short");
            g.grow(g.chunkBytes());
            int[] data = Gpu.random(Gpu.seed()).ints((int) (g.chunkBytes() / 4)).toArray();
            g.mapped().asInts().copyFrom(data);
            int[] back = poison(data.length);
            g.mapped().asInts().copyTo(back);
            assertArrayEquals(data, back);
        }
    }

    private static int[] poison(int n) {
        int[] a = new int[n];
        Arrays.fill(a, POISON);
        return a;
    }
}
