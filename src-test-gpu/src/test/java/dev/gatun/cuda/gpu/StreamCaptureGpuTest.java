package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CaptureInvalidatedException;
import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Graph;
import dev.gatun.cuda.GraphExec;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.StreamCapture;
import dev.gatun.cuda.junit.RequiresGpu;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * runtime-core's stream capture, graphs and executables on the H200, without the graph module:
 * checked against the CPU on random inputs, into poisoned outputs.
 */
@RequiresGpu
class StreamCaptureGpuTest {

    private static final String AFFINE = """
            extern "C" __global__ void affine(unsigned int* y, const unsigned int* x, unsigned int a,
                                              unsigned int b, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) y[i] = x[i] * a + b;
            }
            """;
    private static final int POISON = 0xDEADBEEF;

    /** y = x * a + b, in wrapping 32-bit integers. */
    private static int[] cpuAffine(int[] x, int a, int b) {
        int[] y = new int[x.length];
        for (int i = 0; i < x.length; i++) {
            y[i] = x[i] * a + b;
        }
        return y;
    }

    private static int[] random(Random r, int n) {
        int[] a = new int[n];
        for (int i = 0; i < n; i++) {
            a[i] = r.nextInt();
        }
        return a;
    }

    /** Reads {@code n} ints into an array poisoned first, so that unread elements show. */
    private static int[] read(DeviceBuffer b, int n) {
        int[] out = new int[n];
        Arrays.fill(out, 0x5A5A5A5A);
        b.asInts().copyTo(out);
        return out;
    }

    private static void affine(Kernel k, Stream s, DeviceBuffer y, DeviceBuffer x, int a, int b, int n) {
        k.launch(s, LaunchConfig.covering(n, 128), KernelArg.pointer(y), KernelArg.pointer(x), KernelArg.i32(a),
                KernelArg.i32(b), KernelArg.i32(n));
    }

    private static Graph capture(Stream s, Runnable work) {
        try (StreamCapture capture = s.beginCapture(CaptureMode.THREAD_LOCAL)) {
            work.run();
            return capture.end();
        }
    }

    @Test
    void anExecutableLaunchedOnAnotherStreamMatchesTheCpuAfterWholeGraphAndKernelNodeUpdates() {
        CudaContext ctx = Gpu.context();
        int n = 10_007;
        long seed = Gpu.seed();
        Random r = new Random(seed);
        int[] poisoned = new int[n];
        Arrays.fill(poisoned, POISON);
        Stream captureOn = ctx.createStream();
        Stream launchOn = ctx.createStream();
        try (Kernel k = Gpu.kernel(AFFINE, "affine"); DeviceBuffer x = ctx.allocate(4L * n);
                DeviceBuffer y1 = ctx.allocate(4L * n); DeviceBuffer y2 = ctx.allocate(4L * n)) {
            int[] hostX = random(r, n);
            x.asInts().copyFrom(hostX);
            int a1 = r.nextInt() | 1;
            int b1 = r.nextInt();
            int a2 = r.nextInt() | 1;
            int b2 = r.nextInt();
            int a3 = r.nextInt() | 1;
            int b3 = r.nextInt();
            try (Graph first = capture(captureOn, () -> affine(k, captureOn, y1, x, a1, b1, n));
                    GraphExec exec = first.instantiate()) {
                launchOn.fill(y1.asInts(), POISON);
                exec.launch(launchOn);
                assertArrayEquals(cpuAffine(hostX, a1, b1), read(y1, n), "first launch; seed=" + seed);

                try (Graph same = capture(captureOn, () -> affine(k, captureOn, y1, x, a2, b2, n));
                        Graph twice = capture(captureOn, () -> {
                            affine(k, captureOn, y1, x, a2, b2, n);
                            affine(k, captureOn, y2, x, a2, b2, n);
                        })) {
                    assertFalse(exec.update(twice), "another topology is refused");
                    assertTrue(exec.update(same), "the same topology is updated in place");
                }
                launchOn.fill(y1.asInts(), POISON);
                exec.launch(launchOn);
                assertArrayEquals(cpuAffine(hostX, a2, b2), read(y1, n), "after the update in place; seed=" + seed);

                exec.updateKernelNode(0, k.prepare(LaunchConfig.covering(n, 128), KernelArg.pointer(y2),
                        KernelArg.pointer(x), KernelArg.i32(a3), KernelArg.i32(b3), KernelArg.i32(n)));
                launchOn.fill(y1.asInts(), POISON);
                launchOn.fill(y2.asInts(), POISON);
                exec.launch(launchOn);
                assertArrayEquals(poisoned, read(y1, n), "the updated node no longer writes y1; seed=" + seed);
                assertArrayEquals(cpuAffine(hostX, a3, b3), read(y2, n), "it writes y2 with its new scalars; seed="
                        + seed);
            }
        } finally {
            captureOn.close();
            launchOn.close();
        }
    }

    @Test
    void aQueryOfTheCapturingStreamInvalidatesTheCaptureWhichEndReportsAndTheStreamRecovers() {
        CudaContext ctx = Gpu.context();
        int n = 4099;
        long seed = Gpu.seed();
        Random r = new Random(seed);
        Stream s = ctx.createStream();
        try (Kernel k = Gpu.kernel(AFFINE, "affine"); DeviceBuffer x = ctx.allocate(4L * n);
                DeviceBuffer y = ctx.allocate(4L * n)) {
            int[] hostX = random(r, n);
            x.asInts().copyFrom(hostX);
            int a = r.nextInt() | 1;
            int b = r.nextInt();

            StreamCapture capture = s.beginCapture(CaptureMode.THREAD_LOCAL);
            affine(k, s, y, x, a, b, n);
            // The driver forbids querying a capturing stream, and invalidates the capture for it.
            assertThrows(CudaException.class, s::query);
            CaptureInvalidatedException invalidated = assertThrows(CaptureInvalidatedException.class, capture::end);
            assertEquals("CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
                    assertInstanceOf(CudaException.class, invalidated.getCause()).resultName());
            assertFalse(capture.isOpen());

            s.fill(y.asInts(), POISON);
            affine(k, s, y, x, a, b, n);
            assertArrayEquals(cpuAffine(hostX, a, b), read(y, n), "an eager launch after the invalidated capture; seed="
                    + seed);
            try (Graph graph = capture(s, () -> affine(k, s, y, x, a + 2, b + 2, n));
                    GraphExec exec = graph.instantiate()) {
                s.fill(y.asInts(), POISON);
                exec.launch(s);
                assertArrayEquals(cpuAffine(hostX, a + 2, b + 2), read(y, n), "a new capture on the stream; seed="
                        + seed);
            }
        } finally {
            s.close();
        }
    }
}
