package dev.gatun.testkit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Event;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.Stream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Kernels registered by name, on whichever target this run has: real code on a GPU, Java bodies
 * on the simulator, with the same results and the same argument checks.
 */
@GpuOrSimulated
class KernelTest {

    /** out = a * x + y over n floats. */
    static final String AXPY = """
            extern "C" __global__ void axpy(float* out, const float* x, const float* y, float a, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) out[i] = a * x[i] + y[i];
            }
            """;

    /** Each scalar argument, widened to 64 bits, into out[0..5]. */
    static final String SCALARS = """
            extern "C" __global__ void scalars(long long* out, signed char c, short s, unsigned int u,
                                               long long l, float f, double d) {
                out[0] = c; out[1] = s; out[2] = u; out[3] = l;
                out[4] = __float_as_int(f); out[5] = __double_as_longlong(d);
            }
            """;

    /** What AXPY computes: the GPU fuses a * x + y into one rounding, and so does this. */
    static void axpy(JavaKernel.Launch launch) {
        int n = launch.i32(4);
        MemorySegment out = launch.buffer(0, 4L * n);
        MemorySegment x = launch.buffer(1, 4L * n);
        MemorySegment y = launch.buffer(2, 4L * n);
        for (int i = 0; i < n; i++) {
            out.setAtIndex(ValueLayout.JAVA_FLOAT, i, Math.fma(launch.f32(3), x.getAtIndex(ValueLayout.JAVA_FLOAT, i),
                    y.getAtIndex(ValueLayout.JAVA_FLOAT, i)));
        }
    }

    /** What SCALARS computes. */
    static void scalars(JavaKernel.Launch launch) {
        MemorySegment out = launch.buffer(0, 6 * 8);
        long[] values = {launch.i32(1), launch.i32(2), Integer.toUnsignedLong(launch.i32(3)), launch.i64(4),
            Float.floatToRawIntBits(launch.f32(5)), Double.doubleToRawLongBits(launch.f64(6))};
        MemorySegment.copy(values, 0, out, ValueLayout.JAVA_LONG, 0, values.length);
    }

    @Test
    void aRegisteredKernelOnRandomInputMatchesTheCpu(GpuUnderTest gpu) {
        long seed = System.nanoTime();
        Random random = new Random(seed);
        int n = 1 + random.nextInt(100_000);
        float a = random.nextFloat() * 4 - 2;
        float[] x = new float[n];
        float[] y = new float[n];
        float[] expected = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = random.nextFloat() * 2 - 1;
            y[i] = random.nextFloat() * 2 - 1;
            expected[i] = Math.fma(a, x[i], y[i]);
        }
        float[] poison = new float[n];
        Arrays.fill(poison, Float.NaN); // an element the kernel does not write stays NaN
        float[] got = new float[n];
        CudaContext ctx = gpu.context();
        try (Kernel axpy = gpu.kernel("axpy", KernelCode.cuda(AXPY), KernelTest::axpy);
                DeviceBuffer dx = ctx.allocate(4L * n); DeviceBuffer dy = ctx.allocate(4L * n);
                DeviceBuffer out = ctx.allocate(4L * n)) {
            dx.asFloats().copyFrom(x);
            dy.asFloats().copyFrom(y);
            out.asFloats().copyFrom(poison);
            axpy.launch(ctx.computeStream(), LaunchConfig.covering(n, 256), KernelArg.pointer(out),
                    KernelArg.pointer(dx), KernelArg.pointer(dy), KernelArg.f32(a), KernelArg.i32(n));
            out.asFloats().copyTo(got);
        }
        assertArrayEquals(expected, got, "on " + gpu + ", n = " + n + ", seed " + seed);
    }

    @Test
    void scalarArgumentsOfEverySizeReachTheKernelAsDeclared(GpuUnderTest gpu) {
        Random random = new Random();
        byte c = (byte) random.nextInt();
        short s = (short) random.nextInt();
        int u = random.nextInt() | Integer.MIN_VALUE; // above 2^31: unsigned, it must not come back negative
        long l = random.nextLong();
        float f = random.nextFloat() - 0.5f;
        double d = random.nextDouble() - 0.5;
        long[] got = new long[6];
        CudaContext ctx = gpu.context();
        try (Kernel scalars = gpu.kernel("scalars", KernelCode.cuda(SCALARS), KernelTest::scalars);
                DeviceBuffer out = ctx.allocate(6 * 8)) {
            out.asLongs().copyFrom(new long[] {-1, -1, -1, -1, -1, -1});
            scalars.launch(ctx.computeStream(), LaunchConfig.of(1, 1), KernelArg.pointer(out), KernelArg.i8(c),
                    KernelArg.i16(s), KernelArg.i32(u), KernelArg.i64(l), KernelArg.f32(f), KernelArg.f64(d));
            out.asLongs().copyTo(got);
        }
        assertArrayEquals(new long[] {c, s, Integer.toUnsignedLong(u), l, Float.floatToRawIntBits(f),
            Double.doubleToRawLongBits(d)}, got, "on " + gpu);
    }

    @Test
    void anArgumentOfTheWrongSizeIsRefusedBeforeAnythingIsQueued(GpuUnderTest gpu) {
        CudaContext ctx = gpu.context();
        try (Kernel axpy = gpu.kernel("axpy", KernelCode.cuda(AXPY), KernelTest::axpy);
                DeviceBuffer buffer = ctx.allocate(64)) {
            int launchesBefore = gpu.faults().calls("cuLaunchKernel");
            IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                    () -> axpy.launch(ctx.computeStream(), LaunchConfig.of(1, 16), KernelArg.pointer(buffer),
                            KernelArg.pointer(buffer), KernelArg.pointer(buffer), KernelArg.f64(2), KernelArg.i32(16)));
            assertTrue(refused.getMessage().contains("parameter 3 is 4 bytes"), refused.getMessage());
            assertEquals(launchesBefore, gpu.faults().calls("cuLaunchKernel"), "nothing reached the driver");
        }
    }

    /** What fill computes: p[i] = v for the n ints at p. */
    static void fill(JavaKernel.Launch launch) {
        int n = launch.i32(2);
        MemorySegment p = launch.buffer(0, 4L * n);
        for (int i = 0; i < n; i++) {
            p.setAtIndex(ValueLayout.JAVA_INT, i, launch.i32(1));
        }
    }

    /** Stream b copies what a kernel on stream a wrote; with or without waiting for a's event. */
    private static int[] produceThenConsume(SimulatedGpu gpu, boolean waitForTheEvent) {
        int n = 256;
        int value = 0x600DCAFE;
        int[] got = new int[n];
        CudaContext ctx = gpu.context();
        try (Kernel fill = gpu.kernel("fill", KernelCode.cuda("""
                        extern "C" __global__ void fill(int* p, int v, int n) {
                            int i = blockIdx.x * blockDim.x + threadIdx.x;
                            if (i < n) p[i] = v;
                        }
                        """), KernelTest::fill);
                Stream a = ctx.createStream(); Stream b = ctx.createStream(); Event produced = ctx.createEvent();
                DeviceBuffer mid = ctx.allocate(4L * n); DeviceBuffer out = ctx.allocate(4L * n)) {
            a.fill(mid.asInts(), 0x5A5A5A5A);
            b.fill(out.asInts(), 0x5A5A5A5A);
            gpu.holdWhile(a, () -> {
                fill.launch(a, LaunchConfig.covering(n, 128), KernelArg.pointer(mid), KernelArg.i32(value),
                        KernelArg.i32(n));
                produced.record(a);
                if (waitForTheEvent) {
                    b.waitFor(produced);
                }
                b.copy(out.asInts(), mid.asInts());
            });
            out.asInts().copyTo(got);
        }
        return got;
    }

    @Test
    void holdingAStreamShowsWhetherAnotherWaitsForItsEvent(SimulatedGpu gpu) {
        int[] waited = produceThenConsume(gpu, true);
        assertTrue(Arrays.stream(waited).allMatch(v -> v == 0x600DCAFE), "with the wait, b copies what a wrote");
    }

    @Test
    void holdingAStreamShowsAMissingEventWait(SimulatedGpu gpu) {
        int[] raced = produceThenConsume(gpu, false);
        assertTrue(Arrays.stream(raced).allMatch(v -> v == 0x5A5A5A5A),
                "without the wait, b copied mid before a's kernel wrote it: " + raced[0]);
    }
}
