package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Event;
import dev.gatun.cuda.Graph;
import dev.gatun.cuda.GraphExec;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.KernelLibrary;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.ModuleImage;
import dev.gatun.cuda.SmPartition;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.StreamCapture;
import dev.gatun.cuda.junit.RequiresGpu;
import dev.gatun.cuda.nvrtc.CompileOptions;
import dev.gatun.cuda.nvrtc.CompileTarget;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Green contexts on a real GPU: the device's SMs split in two ({@code Device.partitionSms}), a
 * kernel that holds every SM of one group for about 200 ms, and a short kernel on the other group
 * that completes while the long one still runs; the same short kernel behind the same long kernel
 * on one ordinary context, for comparison (printed as {@code GREEN-TIMING}); a graph captured on a
 * green stream; and one library kernel ({@link KernelLibrary}) on both groups and the primary
 * context, each checked against the CPU on random inputs into poisoned outputs.
 */
@RequiresGpu
class GreenContextGpuTest {

    /**
     * {@code spin}: each block waits {@code cycles} SM clocks (clock64) and counts itself in {@code ran}, so a grid of 32 blocks of 64
     * threads per SM (Hopper's limits: 32 blocks, 2048 threads per SM) fills every SM it may use for
     * that long. {@code axpb}: y = a * x + b.
     */
    private static final String SOURCE = """
            extern "C" __global__ void spin(long long cycles, int* ran) {
                long long start = clock64();
                while (clock64() - start < cycles) { }
                if (threadIdx.x == 0) atomicAdd(ran, 1);
            }
            extern "C" __global__ void axpb(const float* x, float* y, float a, float b, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) y[i] = a * x[i] + b;
            }
            """;
    private static final int SPIN_BLOCKS_PER_SM = 32;
    private static final int SPIN_THREADS = 64;
    private static final int LONG_MILLIS = 200;
    private static final int N = 1 << 16;

    private static KernelLibrary library(CudaContext ctx) {
        ModuleImage image = NvrtcLibrary.system().compiler().compile(SOURCE,
                CompileOptions.builder(CompileTarget.ptx(ctx.device().capabilities())).programName("green.cu")
                        .options("--fmad=false").build()).moduleImage();
        return ctx.loadLibrary(image);
    }

    /**
     * How many SM clocks the spin kernel waits: {@link #LONG_MILLIS} ms at 2 GHz (the H200 boosts to
     * 1.98 GHz; a lower clock only makes it longer). A fixed count rather than the clock-rate
     * attribute, which CUDA 13 deprecates; the test prints the time it took.
     */
    private static final long SPIN_CYCLES = 2_000_000L * LONG_MILLIS;

    /** Half the device's SMs, rounded down to Hopper's 8-SM granularity, in each of two groups. */
    private static SmPartition halves(CudaContext ctx) {
        return ctx.device().partitionSms(ctx.smCount() / 2 / 8 * 8, 2);
    }

    private static float[] randoms(Random r) {
        float[] x = new float[N];
        for (int i = 0; i < N; i++) {
            x[i] = r.nextFloat() * 2 - 1;
        }
        return x;
    }

    private static float[] expected(float[] x, float a, float b) {
        float[] y = new float[N];
        for (int i = 0; i < N; i++) {
            y[i] = a * x[i] + b;
        }
        return y;
    }

    private static float[] poisoned() {
        float[] y = new float[N];
        Arrays.fill(y, Float.NaN);
        return y;
    }

    /** Launches the spin kernel over every SM {@code on} has, on {@code s}, between two timing events. */
    private static void spin(Kernel spin, CudaContext on, Stream s, DeviceBuffer ran, Event start, Event end) {
        start.record(s);
        spin.launch(s, LaunchConfig.of(on.smCount() * SPIN_BLOCKS_PER_SM, SPIN_THREADS), KernelArg.i64(SPIN_CYCLES),
                KernelArg.pointer(ran));
        end.record(s);
    }

    /** The short kernel between two timing events on {@code s}; returns nothing, the caller reads {@code y}. */
    private static void axpb(Kernel k, Stream s, DeviceBuffer x, DeviceBuffer y, float a, float b, Event start, Event end) {
        start.record(s);
        k.launch(s, LaunchConfig.covering(N, 256), KernelArg.pointer(x), KernelArg.pointer(y), KernelArg.f32(a),
                KernelArg.f32(b), KernelArg.i32(N));
        end.record(s);
    }

    @Test
    @Tag(GpuTags.TIMING)
    void aLongKernelOnOneGroupDoesNotDelayAShortKernelOnTheOther() {
        long seed = Gpu.seed();
        Random r = Gpu.random(seed);
        float[] x = randoms(r);
        CudaContext ctx = Gpu.context();
        float shared;
        // Without the split: the long kernel fills every SM of the ordinary context, the short one queues behind it.
        try (KernelLibrary lib = library(ctx); Kernel spin = lib.kernel("spin"); Kernel k = lib.kernel("axpb");
                Stream longStream = ctx.createStream(); Stream shortStream = ctx.createStream();
                DeviceBuffer ran = ctx.allocate(4); DeviceBuffer dx = ctx.allocate(4L * N); DeviceBuffer dy = ctx.allocate(4L * N);
                Event l0 = ctx.createTimingEvent(); Event l1 = ctx.createTimingEvent();
                Event s0 = ctx.createTimingEvent(); Event s1 = ctx.createTimingEvent()) {
            dx.asFloats().copyFrom(x);
            axpb(k, shortStream, dx, dy, 1f, 0f, s0, s1); // warm: the function is loaded before it is timed
            shortStream.synchronize();
            spin(spin, ctx, longStream, ran, l0, l1);
            axpb(k, shortStream, dx, dy, 2f, 1f, s0, s1);
            shortStream.synchronize();
            longStream.synchronize();
            shared = s1.elapsedMillis(s0);
        }
        try (SmPartition p = halves(ctx); KernelLibrary lib = library(ctx)) {
            CudaContext longGroup = p.group(0);
            CudaContext shortGroup = p.group(1);
            assertTrue(longGroup.isGreen() && shortGroup.isGreen());
            try (Kernel spin = lib.kernel("spin", longGroup); Kernel k = lib.kernel("axpb", shortGroup);
                    Stream longStream = longGroup.createStream(); Stream shortStream = shortGroup.createStream();
                    DeviceBuffer ran = longGroup.allocate(4); DeviceBuffer dx = shortGroup.allocate(4L * N);
                    DeviceBuffer dy = shortGroup.allocate(4L * N);
                    Event l0 = longGroup.createTimingEvent(); Event l1 = longGroup.createTimingEvent();
                    Event s0 = shortGroup.createTimingEvent(); Event s1 = shortGroup.createTimingEvent()) {
                dx.asFloats().copyFrom(x);
                ran.asInts().copyFrom(new int[] {0});
                axpb(k, shortStream, dx, dy, 1f, 0f, s0, s1); // warm
                shortStream.synchronize();
                dy.asFloats().copyFrom(poisoned());
                float a = r.nextFloat() * 4 - 2;
                float b = r.nextFloat() * 4 - 2;
                spin(spin, longGroup, longStream, ran, l0, l1);
                axpb(k, shortStream, dx, dy, a, b, s0, s1);
                shortStream.synchronize();
                // The bound: the short kernel completes while the long one still holds its group's SMs.
                assertFalse(l1.query(), "the long kernel finished before the short one on the other group: it was "
                        + "delayed behind it (seed=" + seed + ")");
                float split = s1.elapsedMillis(s0);
                longStream.synchronize();
                float longMillis = l1.elapsedMillis(l0);
                int[] blocks = new int[1];
                ran.asInts().copyTo(blocks);
                assertEquals(longGroup.smCount() * SPIN_BLOCKS_PER_SM, blocks[0], "every block of the long kernel ran");
                float[] got = new float[N];
                dy.asFloats().copyTo(got);
                assertArrayEquals(expected(x, a, b), got, "seed=" + seed);
                System.out.printf("GREEN-TIMING short kernel latency (%d floats): %.3f ms behind a long kernel on all %d SMs "
                        + "of one ordinary context; %.3f ms on a green context of %d SMs while a %.1f ms kernel holds "
                        + "the other green context's %d SMs%n", N, shared, ctx.smCount(), split, shortGroup.smCount(),
                        longMillis, longGroup.smCount());
            }
        }
    }

    @Test
    @Tag(GpuTags.TIMING)
    void aGraphCapturedOnAGreenStreamReplaysThereBesideALongKernelOnTheOtherGroup() {
        long seed = Gpu.seed();
        Random r = Gpu.random(seed);
        float[] x = randoms(r);
        float a = r.nextFloat() * 4 - 2;
        float b = r.nextFloat() * 4 - 2;
        CudaContext ctx = Gpu.context();
        try (SmPartition p = halves(ctx); KernelLibrary lib = library(ctx)) {
            CudaContext longGroup = p.group(0);
            CudaContext g = p.group(1);
            try (Kernel spin = lib.kernel("spin", longGroup); Kernel k = lib.kernel("axpb", g);
                    Stream longStream = longGroup.createStream(); Stream s = g.createStream();
                    DeviceBuffer ran = longGroup.allocate(4); DeviceBuffer dx = g.allocate(4L * N);
                    DeviceBuffer dy = g.allocate(4L * N); Event l0 = longGroup.createTimingEvent();
                    Event l1 = longGroup.createTimingEvent()) {
                dx.asFloats().copyFrom(x);
                dy.asFloats().copyFrom(poisoned());
                Graph graph;
                try (StreamCapture capture = s.beginCapture(CaptureMode.THREAD_LOCAL)) {
                    k.launch(s, LaunchConfig.covering(N, 256), KernelArg.pointer(dx), KernelArg.pointer(dy),
                            KernelArg.f32(a), KernelArg.f32(b), KernelArg.i32(N));
                    graph = capture.end();
                }
                float[] got = new float[N];
                dy.asFloats().copyTo(got);
                assertTrue(Float.isNaN(got[0]) && Float.isNaN(got[N - 1]), "captured, not run");
                try (graph; GraphExec exec = graph.instantiate()) {
                    exec.upload(s);
                    s.synchronize();
                    spin(spin, longGroup, longStream, ran, l0, l1);
                    exec.launch(s);
                    s.synchronize();
                    assertFalse(l1.query(), "the replay waited for the long kernel on the other group (seed=" + seed + ")");
                    longStream.synchronize();
                }
                dy.asFloats().copyTo(got);
                assertArrayEquals(expected(x, a, b), got, "seed=" + seed);
            }
        }
    }

    @Test
    void oneLibraryKernelGivesTheCpusResultsOnBothGroupsAndThePrimaryContext() {
        long seed = Gpu.seed();
        Random r = Gpu.random(seed);
        CudaContext ctx = Gpu.context();
        try (SmPartition p = halves(ctx); KernelLibrary lib = library(ctx)) {
            for (CudaContext on : new CudaContext[] {ctx, p.group(0), p.group(1)}) {
                float[] x = randoms(r);
                float a = r.nextFloat() * 4 - 2;
                float b = r.nextFloat() * 4 - 2;
                try (Kernel k = lib.kernel("axpb", on); DeviceBuffer dx = on.allocate(4L * N);
                        DeviceBuffer dy = on.allocate(4L * N)) {
                    dx.asFloats().copyFrom(x);
                    dy.asFloats().copyFrom(poisoned());
                    k.launch(on.computeStream(), LaunchConfig.covering(N, 256), KernelArg.pointer(dx), KernelArg.pointer(dy),
                            KernelArg.f32(a), KernelArg.f32(b), KernelArg.i32(N));
                    float[] got = new float[N];
                    dy.asFloats().copyTo(got);
                    assertArrayEquals(expected(x, a, b), got, on + ", seed=" + seed);
                }
            }
        }
    }
}
