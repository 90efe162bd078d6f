package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Graph;
import dev.gatun.cuda.GraphExec;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.PinnedBuffer;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.StreamCapture;
import dev.gatun.cuda.TransferState;
import dev.gatun.cuda.junit.RequiresGpu;
import java.lang.foreign.ValueLayout;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * NVIDIA's jacobiCudaGraphs, method 1, in Gatun: every iteration captures its work again (a step
 * that changes x, then a reduction whose sum is copied into pinned memory inside the capture),
 * updates the executable in place (or instantiates it the first time, or when refused), replays
 * it, and reads the sum on the host right after the launch, with no synchronize of its own: the
 * read waits for the replay (issue 34: the capture used to leave an event recorded inside it as
 * the buffer's fence, and the next transfer through the buffer failed on it). Compared with the
 * CPU every iteration, the pinned word poisoned before each launch; then a transfer outside any
 * graph, on another stream, through the same buffer.
 */
@RequiresGpu
class GraphPinnedTransferGpuTest {

    private static final int N = 1 << 20;
    private static final int BLOCK = 256;
    private static final int ITERATIONS = 12;
    private static final long POISON = 0xDEAD_BEEF_DEAD_BEEFL;

    /** x[i] = (3 x[i] + i + k) mod 1024, for iteration k. */
    private static final String STEP = """
            extern "C" __global__ void step(unsigned int* x, int n, int k) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) x[i] = (x[i] * 3u + (unsigned int) i + (unsigned int) k) & 1023u;
            }
            """;
    /** *sum += x[0] + ... + x[n-1], one block's part at a time. */
    private static final String SUM = """
            extern "C" __global__ void sum(const unsigned int* x, int n, unsigned long long* out) {
                __shared__ unsigned long long part[256];
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                part[threadIdx.x] = i < n ? x[i] : 0ull;
                __syncthreads();
                for (int s = blockDim.x / 2; s > 0; s >>= 1) {
                    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
                    __syncthreads();
                }
                if (threadIdx.x == 0) atomicAdd(out, part[0]);
            }
            """;

    @Test
    void aSumCopiedToPinnedMemoryInACaptureTakenAgainEveryIterationMatchesTheCpu() {
        CudaContext ctx = Gpu.context();
        long seed = Gpu.seed();
        Random random = Gpu.random(seed);
        int[] x = new int[N];
        for (int i = 0; i < N; i++) {
            x[i] = random.nextInt(1024);
        }
        int grid = (N + BLOCK - 1) / BLOCK;
        int updated = 0;
        int instantiated = 0;
        GraphExec exec = null;
        try (Kernel step = Gpu.kernel(STEP, "step"); Kernel sum = Gpu.kernel(SUM, "sum");
                DeviceBuffer dx = ctx.allocate(4L * N); DeviceBuffer dsum = ctx.allocate(8);
                PinnedBuffer pinned = ctx.allocatePinned(8); Stream stream = ctx.createStream();
                Stream other = ctx.createStream()) {
            dx.asInts().copyFrom(x);
            for (int k = 0; k < ITERATIONS; k++) {
                Graph graph;
                try (StreamCapture capture = stream.beginCapture(CaptureMode.GLOBAL)) {
                    step.launch(stream, LaunchConfig.of(grid, BLOCK), KernelArg.pointer(dx), KernelArg.i32(N),
                            KernelArg.i32(k));
                    stream.memset(dsum.bytes(), (byte) 0);
                    sum.launch(stream, LaunchConfig.of(grid, BLOCK), KernelArg.pointer(dx), KernelArg.i32(N),
                            KernelArg.pointer(dsum));
                    stream.download(pinned, 0, dsum.bytes());
                    graph = capture.end();
                }
                try (graph) {
                    if (exec != null && exec.update(graph)) {
                        updated++;
                    } else {
                        if (exec != null) {
                            exec.close();
                        }
                        exec = graph.instantiate();
                        instantiated++;
                    }
                }
                pinned.segment().set(ValueLayout.JAVA_LONG, 0, POISON);
                exec.launch(stream);
                long onGpu = pinned.segment().get(ValueLayout.JAVA_LONG, 0); // right after the launch
                long onCpu = cpuStepAndSum(x, k);
                final int iteration = k;
                assertEquals(onCpu, onGpu, () -> "iteration " + iteration + " (seed " + seed + ")");
            }
            // A transfer outside any graph, on another stream, through the same buffer: ordered
            // after the last replay, and its fence is an event recorded outside any capture.
            pinned.segment().set(ValueLayout.JAVA_LONG, 0, POISON);
            other.download(pinned, 0, dsum.bytes());
            assertEquals(TransferState.EVENT_RECORDED, pinned.transferState(), "the eager download's own fence");
            assertEquals(sumOf(x), pinned.segment().get(ValueLayout.JAVA_LONG, 0), () -> "seed " + seed);
            stream.synchronize();
        } finally {
            if (exec != null) {
                exec.close();
            }
        }
        System.out.println("GRAPH-PINNED jacobi method 1: " + ITERATIONS + " re-captures (" + updated
                + " updated in place, " + instantiated + " instantiated), every host read right after the replay "
                + "matched the CPU sum; an eager download on another stream after them matched too");
    }

    /** One iteration on the CPU: the step, then the sum (as the GPU computes them). */
    private static long cpuStepAndSum(int[] x, int k) {
        for (int i = 0; i < x.length; i++) {
            x[i] = (x[i] * 3 + i + k) & 1023;
        }
        return sumOf(x);
    }

    private static long sumOf(int[] x) {
        long s = 0;
        for (int v : x) {
            s += v;
        }
        return s;
    }
}
