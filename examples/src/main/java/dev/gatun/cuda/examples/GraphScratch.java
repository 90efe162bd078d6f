package dev.gatun.cuda.examples;

import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Graph;
import dev.gatun.cuda.GraphExec;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.StreamCapture;
import dev.gatun.cuda.nvrtc.CompileOptions;
import dev.gatun.cuda.nvrtc.CompileTarget;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.util.Arrays;
import java.util.Random;

/**
 * Allocation inside a stream capture: a graph whose scratch buffer is allocated and freed inside
 * it (graph memory nodes), and whose output it keeps at the same address on every replay.
 * Replays three random inputs and compares each output with the CPU.
 */
public final class GraphScratch {

    /** y[i] = x[i] * k + x[(i + 1) % n], in wrapping 32-bit integers. */
    static final String MIX_SOURCE = """
            extern "C" __global__ void mix(int* y, const int* x, int k, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) y[i] = x[i] * k + x[(i + 1) % n];
            }
            """;

    static final int ELEMENTS = 1 << 20;
    static final int REPLAYS = 3;

    private GraphScratch() {
    }

    public static void main(String[] args) {
        ExampleMain.exit("GraphScratch", cuda -> {
            CudaContext ctx = cuda.device(0).context();
            try {
                NvrtcLibrary.system().compiler().load(ctx.modules(), "scratch", MIX_SOURCE,
                        CompileOptions.of(CompileTarget.ptx(ctx.device().capabilities())), "mix");
                return run(ctx, ELEMENTS, System.nanoTime());
            } finally {
                ctx.close();
            }
        });
    }

    /** The CPU's result: mix by 3 into the scratch, then mix the scratch by 5. */
    static int[] cpu(int[] x) {
        return mix(mix(x, 3), 5);
    }

    private static int[] mix(int[] x, int k) {
        int n = x.length;
        int[] y = new int[n];
        for (int i = 0; i < n; i++) {
            y[i] = x[i] * k + x[(i + 1) % n];
        }
        return y;
    }

    /**
     * Captures the two mixes with module "scratch"'s kernel, replays the graph on {@link #REPLAYS}
     * random inputs of {@code n} ints, and reports whether every output matches the CPU and kept
     * its address.
     */
    static boolean run(CudaContext ctx, int n, long seed) {
        Random random = new Random(seed);
        Stream stream = ctx.computeStream();
        LaunchConfig grid = LaunchConfig.covering(n, 256);
        long bytes = 4L * n;
        int[] got = new int[n];
        boolean match = true;
        try (Kernel mix = ctx.modules().kernel("scratch", "mix"); DeviceBuffer in = ctx.allocate(bytes)) {
            // snippet:graph-memory
            Graph graph;
            long address;
            try (StreamCapture capture = stream.beginCapture(CaptureMode.THREAD_LOCAL)) {
                DeviceBuffer scratch = stream.allocate(bytes);    // an allocation node: memory only while the graph runs
                mix.launch(stream, grid, KernelArg.pointer(scratch), KernelArg.pointer(in), KernelArg.i32(3), KernelArg.i32(n));
                DeviceBuffer out = stream.allocate(bytes);        // kept by the graph, at this address on every replay
                address = out.address();
                mix.launch(stream, grid, KernelArg.pointer(out), KernelArg.pointer(scratch), KernelArg.i32(5), KernelArg.i32(n));
                scratch.close();                                  // a free node: each replay frees it again
                graph = capture.end();
            }
            DeviceBuffer out = graph.allocations().get(0);
            try (graph; GraphExec exec = graph.instantiate()) {   // one executable at a time
                for (int replay = 0; replay < REPLAYS; replay++) {
                    int[] x = random.ints(n).toArray();
                    in.asInts().copyFrom(x);
                    exec.launch(stream);                          // frees the last replay's out, allocates it again
                    Arrays.fill(got, 0x5A5A5A5A);                 // an element the copy misses shows
                    out.asInts().copyTo(got);                     // ordered after the replay
                    match &= Arrays.equals(cpu(x), got) && out.address() == address;
                }
            }
            out.close();                                          // freed once the graph and its executable are gone
            // end-snippet
        }
        ctx.synchronize(); // completes the retirements; then the graph memory nobody uses goes back
        ctx.diagnostics().trimGraphMemory();
        return match;
    }
}
