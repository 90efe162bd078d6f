package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Graph;
import dev.gatun.cuda.GraphExec;
import dev.gatun.cuda.GraphNode;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.PinnedBuffer;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.StreamCapture;
import dev.gatun.cuda.junit.RequiresGpu;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;

/**
 * NVIDIA's simpleCudaGraphs in Gatun's API on a real GPU: a two-kernel reduction of random
 * integers, built node by node (a copy from pinned memory, memsets, the two kernels, a copy back to
 * pinned memory and a host node that reads the sum, as {@code cudaGraphsManual}) and captured from
 * a stream with a host function at its end ({@code cudaGraphsUsingStreamCapture}); each launch's
 * sum, seen by the host callback, is compared with the CPU's. Also: a driver call made inside a
 * callback is refused, and what a callback throws is surfaced.
 */
@RequiresGpu
class HostNodeGpuTest {

    static final String SOURCE = """
            extern "C" __global__ void reduce(const unsigned int* in, unsigned int* partial, int n) {
                __shared__ unsigned int s[256];
                unsigned int sum = 0;
                for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) sum += in[i];
                s[threadIdx.x] = sum;
                __syncthreads();
                for (int k = blockDim.x / 2; k > 0; k >>= 1) {
                    if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
                    __syncthreads();
                }
                if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
            }
            extern "C" __global__ void reduceFinal(const unsigned int* partial, unsigned int* result, int blocks) {
                if (threadIdx.x == 0 && blockIdx.x == 0) {
                    unsigned int sum = 0;
                    for (int b = 0; b < blocks; b++) sum += partial[b];
                    *result = sum;
                    __threadfence_system(); // the result may be pinned host memory a host function reads next
                }
            }
            """;
    static final int N = 1 << 20;
    static final int BLOCKS = 64;
    static final int THREADS = 256;
    static final int POISON = 0xDEADBEEF;
    private static final int LAUNCHES = 10;

    static int cpuSum(int[] in) {
        int sum = 0;
        for (int v : in) {
            sum += v; // wraps as the GPU's unsigned sum does
        }
        return sum;
    }

    static int[] random(Random r) {
        int[] in = new int[N];
        for (int i = 0; i < N; i++) {
            in[i] = r.nextInt();
        }
        return in;
    }

    /**
     * Launches {@code exec} {@value #LAUNCHES} times, each on fresh random input that {@code write}
     * puts where the graph reads it, with the pinned result poisoned first, and checks that the host
     * callback saw each launch's sum as the CPU computes it.
     */
    private static void launchAndCheck(GraphExec exec, Stream s, Random r, long seed, Consumer<int[]> write,
            MemorySegment outHost, List<Integer> seen) {
        for (int launch = 0; launch < LAUNCHES; launch++) {
            int[] input = random(r);
            write.accept(input);
            outHost.set(ValueLayout.JAVA_INT, 0, POISON);
            exec.launch(s);
            s.synchronize();
            assertEquals(launch + 1, seen.size(), "one host callback per launch; seed=" + seed);
            assertEquals(cpuSum(input), seen.get(launch), "launch " + launch + "; seed=" + seed);
        }
    }

    @Test
    void theManualGraphsHostNodeSeesEachLaunchsSumAsTheCpuComputesIt(TestReporter reporter) {
        CudaContext ctx = Gpu.context();
        long failuresBefore = ctx.diagnostics().hostCallbackFailureCount(); // the shared context's: other tests' throws count too
        long seed = Gpu.seed();
        Random r = Gpu.random(seed);
        try (Kernel reduce = Gpu.kernel(SOURCE, "reduce"); Kernel reduceFinal = Gpu.kernel(SOURCE, "reduceFinal");
                Stream s = ctx.createStream(); PinnedBuffer in = ctx.allocatePinned(4L * N);
                PinnedBuffer out = ctx.allocatePinned(4); DeviceBuffer dIn = ctx.allocate(4L * N);
                DeviceBuffer partial = ctx.allocate(4L * BLOCKS); DeviceBuffer result = ctx.allocate(4);
                Graph g = ctx.createGraph()) {
            MemorySegment inHost = in.segment();
            MemorySegment outHost = out.segment();
            List<Integer> seen = new ArrayList<>();
            GraphNode upload = g.addUpload(dIn.asInts(), in, 0);
            GraphNode clearPartial = g.addFill(partial.asInts(), 0);
            GraphNode sum = g.addKernel(reduce.prepare(LaunchConfig.of(BLOCKS, THREADS), KernelArg.pointer(dIn),
                    KernelArg.pointer(partial), KernelArg.i32(N)), upload, clearPartial);
            GraphNode clearResult = g.addFill(result.asInts(), 0);
            GraphNode total = g.addKernel(reduceFinal.prepare(LaunchConfig.of(1, 1), KernelArg.pointer(partial),
                    KernelArg.pointer(result), KernelArg.i32(BLOCKS)), sum, clearResult);
            GraphNode download = g.addDownload(out, 0, result.asInts(), total);
            g.addHost(() -> {
                seen.add(outHost.get(ValueLayout.JAVA_INT, 0));
                outHost.set(ValueLayout.JAVA_INT, 0, POISON); // the next launch must copy its own sum
            }, download);
            assertEquals(7, g.nodes().size());
            try (GraphExec exec = g.instantiate()) {
                launchAndCheck(exec, s, r, seed, input -> MemorySegment.copy(input, 0, inHost, ValueLayout.JAVA_INT, 0, N),
                        outHost, seen);
            }
            reporter.publishEntry("simpleCudaGraphs (manual)", LAUNCHES + " launches, host node saw each sum = CPU; last "
                    + Integer.toUnsignedString(seen.getLast()) + " (seed " + seed + ")");
        }
        assertEquals(failuresBefore, ctx.diagnostics().hostCallbackFailureCount(), "no callback of this graph threw");
    }

    @Test
    void theCapturedGraphsHostFunctionSeesEachLaunchsSumAsTheCpuComputesIt(TestReporter reporter) {
        CudaContext ctx = Gpu.context();
        long seed = Gpu.seed();
        Random r = Gpu.random(seed);
        try (Kernel reduce = Gpu.kernel(SOURCE, "reduce"); Kernel reduceFinal = Gpu.kernel(SOURCE, "reduceFinal");
                Stream s = ctx.createStream(); PinnedBuffer out = ctx.allocatePinned(4);
                DeviceBuffer staged = ctx.allocate(4L * N); DeviceBuffer dIn = ctx.allocate(4L * N);
                DeviceBuffer partial = ctx.allocate(4L * BLOCKS)) {
            MemorySegment outHost = out.segment();
            List<Integer> seen = new ArrayList<>();
            StreamCapture capture = s.beginCapture(CaptureMode.GLOBAL);
            s.copy(dIn.asInts(), staged.asInts());
            s.fill(partial.asInts(), 0);
            reduce.launch(s, LaunchConfig.of(BLOCKS, THREADS), KernelArg.pointer(dIn), KernelArg.pointer(partial),
                    KernelArg.i32(N));
            // The final kernel writes the sum straight into pinned host memory (mapped under unified
            // addressing); the host function after it reads it, as the sample's does after its copy.
            reduceFinal.launch(s, LaunchConfig.of(1, 1), KernelArg.pointer(partial),
                    KernelArg.address(outHost.address()), KernelArg.i32(BLOCKS));
            s.launchHostFunction(() -> {
                seen.add(outHost.get(ValueLayout.JAVA_INT, 0));
                outHost.set(ValueLayout.JAVA_INT, 0, POISON);
            });
            try (Graph g = capture.end()) {
                assertEquals(0, seen.size(), "captured, not run");
                List<GraphNode.Kind> kinds = g.nodes().stream().map(GraphNode::kind).sorted().toList();
                assertEquals(List.of(GraphNode.Kind.KERNEL, GraphNode.Kind.KERNEL, GraphNode.Kind.MEMSET,
                        GraphNode.Kind.COPY, GraphNode.Kind.HOST), kinds);
                try (GraphExec exec = g.instantiate()) {
                    launchAndCheck(exec, s, r, seed, staged.asInts()::copyFrom, outHost, seen);
                }
            }
            reporter.publishEntry("simpleCudaGraphs (stream capture)", LAUNCHES + " launches, captured host function "
                    + "saw each sum = CPU; last " + Integer.toUnsignedString(seen.getLast()) + " (seed " + seed + ")");
        }
    }

    @Test
    void aDriverCallInsideACallbackIsRefusedAndAThrowIsSurfaced(TestReporter reporter) {
        CudaContext ctx = Gpu.context();
        ctx.diagnostics().takeHostCallbackFailures();
        long failuresBefore = ctx.diagnostics().hostCallbackFailureCount();
        List<Throwable> refused = new ArrayList<>();
        try (Stream s = ctx.createStream(); Graph g = ctx.createGraph()) {
            GraphNode first = g.addHost(() -> {
                try {
                    s.query();
                } catch (RuntimeException e) {
                    refused.add(e);
                }
            });
            g.addHost(() -> {
                throw new IllegalStateException("thrown on purpose inside a host node");
            }, first);
            try (GraphExec exec = g.instantiate()) {
                exec.launch(s);
                s.synchronize();
            }
        }
        assertEquals(1, refused.size());
        CudaException e = assertInstanceOf(CudaException.class, refused.getFirst());
        assertEquals("CUDA_ERROR_NOT_PERMITTED", e.resultName());
        assertEquals(failuresBefore + 1, ctx.diagnostics().hostCallbackFailureCount());
        List<Throwable> taken = ctx.diagnostics().takeHostCallbackFailures();
        assertTrue(taken.stream().anyMatch(t -> "thrown on purpose inside a host node".equals(t.getMessage())), taken::toString);
        reporter.publishEntry("host callback rules", "refused: " + e.getMessage().lines().findFirst().orElse(""));
    }
}
