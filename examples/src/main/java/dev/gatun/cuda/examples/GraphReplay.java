package dev.gatun.cuda.examples;

import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Graph;
import dev.gatun.cuda.GraphExec;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.KernelLaunch;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.StreamCapture;
import dev.gatun.cuda.graph.CudaGraphs;
import dev.gatun.cuda.graph.GraphSlot;
import dev.gatun.cuda.graph.LatchFlags;
import dev.gatun.cuda.graph.ValidationLatch;
import dev.gatun.cuda.graph.ValidationRecipient;
import dev.gatun.cuda.nvrtc.CompileOptions;
import dev.gatun.cuda.nvrtc.CompileTarget;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.util.Arrays;
import java.util.Random;

/**
 * Captures a gather kernel into a graph, replays it once per request, and uses the validation
 * latch to find the request whose input held an out-of-range index: the kernel raises a bit in
 * the latch's device word instead of reading outside its table, the host reads the bit at the
 * request boundary and rejects that request, and the next request runs on the same graph, clean.
 */
public final class GraphReplay {

    /** out[i] = table[index[i]], or a raised latch bit (and 0) when index[i] is outside the table. */
    static final String GATHER_SOURCE = """
            #include <gatun_latch.cuh>
            extern "C" __global__ void gather(float* out, const int* index, const float* table, int n, int m,
                                              unsigned int* latch) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i >= n) return;
                int k = index[i];
                if (k < 0 || k >= m) { gatun_latch_raise(latch, GATUN_LATCH_OUT_OF_RANGE); out[i] = 0.0f; return; }
                out[i] = table[k];
            }
            """;

    static final int REQUEST_ELEMENTS = 4099;
    static final int TABLE_ELEMENTS = 64;

    private GraphReplay() {
    }

    public static void main(String[] args) {
        ExampleMain.exit("GraphReplay", cuda -> {
            CudaContext ctx = cuda.device(0).context();
            try {
                // gatun_latch.cuh travels inside gatun-graph's jar; latchIncludeDirectory() unpacks it.
                NvrtcLibrary.system().compiler().load(ctx.modules(), "lookup", GATHER_SOURCE,
                        CompileOptions.builder(CompileTarget.ptx(ctx.device().capabilities()))
                                .includeDirectory(CudaGraphs.latchIncludeDirectory()).build(), "gather");
                return run(ctx, REQUEST_ELEMENTS, TABLE_ELEMENTS, System.nanoTime());
            } finally {
                ctx.close(); // unloads the modules its registry holds
            }
        });
    }

    /**
     * Serves three requests of {@code n} indices into a table of {@code m} floats with module
     * "lookup"'s gather kernel, replayed from a graph: a valid one, one with a bad index, and the
     * first again. True when the latch flags exactly the bad request and the good requests'
     * outputs match the CPU.
     */
    static boolean run(CudaContext ctx, int n, int m, long seed) {
        Random random = new Random(seed);
        float[] hostTable = new float[m];
        for (int k = 0; k < m; k++) {
            hostTable[k] = random.nextFloat() + 1; // never zero: the kernel's 0.0f for a bad index stands out
        }
        int[] valid = random.ints(n, 0, m).toArray();
        int[] bad = valid.clone();
        bad[random.nextInt(n)] = m + random.nextInt(1000); // one index past the end of the table
        float[] expected = new float[n];
        for (int i = 0; i < n; i++) {
            expected[i] = hostTable[valid[i]];
        }
        float[] got = new float[n];
        Stream stream = ctx.computeStream(); // the latch word is cleared in order on the compute stream
        try (CudaGraphs graphs = CudaGraphs.create(ctx);  // its own latch word; closed before the context
                Kernel gather = ctx.modules().kernel("lookup", "gather");
                DeviceBuffer index = ctx.allocate(4L * n); DeviceBuffer table = ctx.allocate(4L * m);
                DeviceBuffer out = ctx.allocate(4L * n)) {
            table.asFloats().copyFrom(hostTable);
            index.asInts().copyFrom(valid);
            KernelLaunch lookup = gather.prepare(LaunchConfig.covering(n, 128), KernelArg.pointer(out),
                    KernelArg.pointer(index), KernelArg.pointer(table), KernelArg.i32(n), KernelArg.i32(m),
                    KernelArg.pointer(graphs.latchWord()));

            // First the core owners a slot is made of: a capture, its graph and an executable.
            Arrays.fill(got, Float.NaN);
            // snippet:graph-exec
            Graph graph;
            try (StreamCapture capture = stream.beginCapture(CaptureMode.THREAD_LOCAL)) {
                lookup.launch(stream);                   // recorded, not run
                graph = capture.end();                   // CaptureInvalidatedException if it was invalidated
            }
            try (graph; GraphExec exec = graph.instantiate()) {
                exec.launch(stream);                     // a warmed launch allocates nothing, looks nothing up
                out.asFloats().copyTo(got);              // ordered after the launch
            }                                            // destroyed once its last launch has completed
            // end-snippet
            boolean executableMatches = Arrays.equals(expected, got);

            // snippet:graph-slot
            GraphSlot slot = graphs.registerGroup("session-1").slot("lookup");
            slot.beginCapture(stream, CaptureMode.THREAD_LOCAL);
            lookup.launch(stream);                       // captured, not run
            slot.endCapture();                           // appended to the slot as a segment
            ValidationLatch latch = graphs.latch();
            ValidationRecipient request = latch.register("request");
            // end-snippet

            Arrays.fill(got, Float.NaN);
            boolean firstClean = serve(slot, stream, latch, request, index, valid) == 0;
            out.asFloats().copyTo(got);
            boolean firstMatches = Arrays.equals(expected, got);

            // The bad request: the latch says so, and its output is thrown away unread.
            boolean badFlagged = (serve(slot, stream, latch, request, index, bad) & LatchFlags.OUT_OF_RANGE) != 0;

            // Recovered: the same graph serves the next request, and its generation starts clean.
            Arrays.fill(got, Float.NaN);
            boolean nextClean = serve(slot, stream, latch, request, index, valid) == 0;
            out.asFloats().copyTo(got);
            boolean nextMatches = Arrays.equals(expected, got);

            latch.unregister(request);
            return executableMatches && firstClean && firstMatches && badFlagged && nextClean && nextMatches;
        }
    }

    /** One request: its indices in, one replay, and the latch's flags for it (0: every index was in range). */
    private static int serve(GraphSlot slot, Stream stream, ValidationLatch latch, ValidationRecipient request,
            DeviceBuffer index, int[] indices) {
        // snippet:graph-latch
        long token = latch.begin(request);               // a new generation: the word's clear is queued
        latch.activate(request, token);                  // no other recipient waits for this request
        index.asInts().copyFrom(indices);                // the input, through a buffer the graph baked in
        slot.replay(stream);                             // every segment in order: no lock, no allocation
        int flags = latch.consume(request, token);       // waits for the replay, reads and clears the word
        // end-snippet
        return flags;
    }
}
