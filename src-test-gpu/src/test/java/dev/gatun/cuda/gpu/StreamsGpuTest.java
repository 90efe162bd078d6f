package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Event;
import dev.gatun.cuda.Fence;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.KernelLaunch;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.PinnedBuffer;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.junit.RequiresGpu;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

@RequiresGpu
class StreamsGpuTest {

    private static final String ACCUMULATE = """
            extern "C" __global__ void accumulate(float* sum, const float* x, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) sum[i] = sum[i] + x[i];
            }
            """;

    /**
     * Seed 002's prefetch: two pinned buffers alternate; the copy stream uploads wave k+1 while
     * the compute stream adds wave k, ordered only by fences. Any missing fence shows as a
     * wrong sum (a wave read before it arrived, or a pinned buffer overwritten in flight).
     */
    @Test
    void aDoubleBufferedPrefetchOverManyWavesIsRaceFree() {
        int n = (1 << 20) + 3;
        int waves = 64;
        long seed = Gpu.seed();
        Random r = new Random(seed);
        CudaContext ctx = Gpu.context();
        Stream copy = ctx.copyStream();
        Stream compute = ctx.computeStream();
        float[] expected = new float[n];
        try (Kernel k = Gpu.kernel(ACCUMULATE, "accumulate");
                PinnedBuffer h0 = ctx.allocatePinned(4L * n); PinnedBuffer h1 = ctx.allocatePinned(4L * n);
                DeviceBuffer d0 = ctx.allocate(4L * n); DeviceBuffer d1 = ctx.allocate(4L * n);
                DeviceBuffer sum = ctx.allocate(4L * n)) {
            PinnedBuffer[] host = {h0, h1};
            DeviceBuffer[] dev = {d0, d1};
            compute.memset(sum.bytes(), (byte) 0);
            KernelLaunch[] add = {
                k.prepare(LaunchConfig.covering(n, 256), KernelArg.pointer(sum), KernelArg.pointer(d0), KernelArg.i32(n)),
                k.prepare(LaunchConfig.covering(n, 256), KernelArg.pointer(sum), KernelArg.pointer(d1), KernelArg.i32(n))};
            Fence[] consumed = new Fence[2];
            for (int wave = 0; wave < waves; wave++) {
                int b = wave & 1;
                MemorySegment seg = host[b].segment(); // waits for this buffer's previous upload only
                for (int i = 0; i < n; i++) {
                    float v = r.nextFloat();
                    seg.setAtIndex(ValueLayout.JAVA_FLOAT, i, v);
                    expected[i] = expected[i] + v;
                }
                if (consumed[b] != null) {
                    copy.waitFor(consumed[b]); // the kernel that read dev[b] last time is done with it
                }
                copy.upload(dev[b].bytes(), host[b], 0);
                compute.waitFor(copy.recordFence());
                add[b].launch(compute);
                consumed[b] = compute.recordFence();
            }
            float[] out = new float[n];
            Arrays.fill(out, Float.NaN);
            sum.asFloats().copyTo(out);
            assertArrayEquals(expected, out, "seed=" + seed);
            for (Fence f : consumed) {
                f.close();
            }
        }
    }

    /**
     * The copy stream runs while a kernel on the compute stream is still busy: the kernel waits
     * for a host flag, and the copy must finish before the host sets it.
     */
    @Test
    @Tag(GpuTags.TIMING)
    @Tag(GpuTags.HOST_RELEASED_KERNEL)
    void copiesOnTheCopyStreamOverlapWorkOnTheComputeStream() throws InterruptedException {
        CudaContext ctx = Gpu.context();
        int n = 64 << 20;
        try (Kernel spin = Gpu.kernel(Gpu.SPIN_THEN_FILL, "spin_then_fill"); PinnedBuffer flag = ctx.allocatePinned(4);
                DeviceBuffer busy = ctx.allocate(4096); DeviceBuffer src = ctx.allocate(n); DeviceBuffer dst = ctx.allocate(n)) {
            flag.segment().set(ValueLayout.JAVA_INT, 0, 0);
            spin.launch(ctx.computeStream(), LaunchConfig.of(1, 32), KernelArg.address(flag.segment().address()),
                    KernelArg.pointer(busy), KernelArg.f32(1f), KernelArg.i64(1024));
            // The source is written first: compute-sanitizer's initcheck flags a copy of memory
            // nothing wrote (it found this one on the H200).
            ctx.copyStream().memset(src.bytes(), (byte) 0x5A);
            ctx.copyStream().copy(dst.bytes(), src.bytes());
            boolean copied = false;
            for (int i = 0; i < 60_000 && !copied; i++) {
                copied = ctx.copyStream().query();
                if (!copied) {
                    Thread.sleep(1);
                }
            }
            boolean kernelStillRunning = !ctx.computeStream().query();
            flag.segment().set(ValueLayout.JAVA_INT, 0, 1);
            ctx.computeStream().synchronize();
            assertTrue(copied, "the copy finished while the compute stream was blocked");
            assertTrue(kernelStillRunning, "the kernel was still waiting for the flag when the copy finished");
        }
    }

    @Test
    void prioritiesFollowTheDevicesRangeAndTimingEventsMeasure() {
        CudaContext ctx = Gpu.context();
        assertTrue(ctx.greatestStreamPriority() < ctx.leastStreamPriority(), "H200 has several priorities");
        try (Stream high = ctx.createStream(ctx.greatestStreamPriority()); Stream low = ctx.createStream(ctx.leastStreamPriority());
                Event start = ctx.createTimingEvent(); Event end = ctx.createTimingEvent(); DeviceBuffer b = ctx.allocate(256 << 20)) {
            assertEquals(ctx.greatestStreamPriority(), high.priority());
            assertEquals(ctx.leastStreamPriority(), low.priority());
            start.record(high);
            for (int i = 0; i < 10; i++) {
                high.memset(b.bytes(), (byte) i);
            }
            end.record(high);
            end.synchronize();
            assertTrue(end.query());
            float ms = end.elapsedMillis(start);
            assertTrue(ms > 0 && ms < 10_000, "2.5 GB of memset took " + ms + " ms");
            assertFalse(Float.isNaN(ms));
        }
    }
}
