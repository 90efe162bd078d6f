package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.ConditionalHandle;
import dev.gatun.cuda.ConditionalNode;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Graph;
import dev.gatun.cuda.GraphExec;
import dev.gatun.cuda.GraphNode;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.KernelLaunch;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.StreamCapture;
import dev.gatun.cuda.graph.CudaGraphs;
import dev.gatun.cuda.junit.RequiresGpu;
import dev.gatun.cuda.nvrtc.CompileOptions;
import dev.gatun.cuda.nvrtc.CompileTarget;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Conditional nodes inside a stream capture on the H200, in the shape of NVIDIA's
 * graphConditionalNodes sample: the handle is created in the graph being captured
 * ({@code cuStreamGetCaptureInfo_v3}), a captured kernel sets it, the conditional node is added
 * after the capture's dependencies and made its only one ({@code cuStreamUpdateCaptureDependencies_v2}),
 * and its body is captured on a second stream ({@code cuStreamBeginCaptureToGraph}).
 *
 * <p>{@code capturedWhileGraph}: a kernel captured before the loop reads the round count from
 * device memory into a counter and sets the handle to (counter != 0); the WHILE body adds
 * {@code v} to every element and its last block decrements the counter and sets the handle to
 * (counter != 0); a kernel captured after the loop doubles every element (it must wait for the
 * loop). A captured IF: a kernel sets the handle from random data, the body scales, a kernel after
 * it adds. Each executable is replayed with fresh random inputs and round counts (0 included),
 * outputs poisoned first, and compared with the CPU. Prints one {@code CAPTURED-CONDITIONAL} line
 * per test with the replays, the rounds and the branches taken.
 */
@RequiresGpu
class CapturedConditionalGpuTest {

    private static final String MODULE = "captured-conditional-nodes";
    private static final String SOURCE = """
            #include "gatun_conditional.cuh"

            // Before the loop: the counter takes the rounds asked for, and the loop runs when there are any.
            extern "C" __global__ void loop_open(unsigned int* counter, const unsigned int* rounds,
                                                 cudaGraphConditionalHandle loop) {
                if (blockIdx.x == 0 && threadIdx.x == 0) {
                    unsigned int k = *rounds;
                    *counter = k;
                    gatun_conditional_set(loop, k != 0u);
                }
            }

            // The body: x[i] += v[i]; the last block counts down and ends the loop at 0.
            extern "C" __global__ void loop_body(float* x, const float* v, int n, unsigned int* counter,
                                                 unsigned int* arrivals, cudaGraphConditionalHandle loop) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) x[i] += v[i];
                if (gatun_last_block(arrivals)) {
                    unsigned int left = *counter - 1u;
                    *counter = left;
                    gatun_conditional_set(loop, left != 0u);
                }
            }

            // The branch, from data: taken when data[0] is positive.
            extern "C" __global__ void decide(const float* data, cudaGraphConditionalHandle branch) {
                if (blockIdx.x == 0 && threadIdx.x == 0) gatun_conditional_set(branch, data[0] > 0.0f);
            }

            extern "C" __global__ void scale(float* x, float a, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) x[i] *= a;
            }

            extern "C" __global__ void shift(float* x, float b, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) x[i] += b;
            }
            """;
    private static final int POISON = 0x7FC0DEAD; // a NaN: never equal to a computed value
    private static final int N = 10_007;
    private static final int THREADS = 128;
    private static final int REPLAYS = 6;

    private static CudaContext ctx;
    private static Kernel loopOpen;
    private static Kernel loopBody;
    private static Kernel decide;
    private static Kernel scale;
    private static Kernel shift;

    @BeforeAll
    static void compile() {
        ctx = Gpu.context();
        NvrtcLibrary.system().compiler().load(ctx.modules(), MODULE, SOURCE,
                CompileOptions.builder(CompileTarget.cubin(ctx.device().capabilities()))
                        .programName("captured_conditional.cu")
                        .includeDirectory(CudaGraphs.conditionalIncludeDirectory()).build(),
                "loop_open", "loop_body", "decide", "scale", "shift");
        loopOpen = ctx.modules().kernel(MODULE, "loop_open");
        loopBody = ctx.modules().kernel(MODULE, "loop_body");
        decide = ctx.modules().kernel(MODULE, "decide");
        scale = ctx.modules().kernel(MODULE, "scale");
        shift = ctx.modules().kernel(MODULE, "shift");
    }

    @AfterAll
    static void unload() {
        for (Kernel k : List.of(loopOpen, loopBody, decide, scale, shift)) {
            k.close();
        }
        ctx.modules().unload(MODULE);
    }

    @Test
    void aCapturedWhileLoopMatchesTheCpuOnEveryReplay() {
        long seed = Gpu.seed();
        Random r = Gpu.random(seed);
        try (Stream s = ctx.createStream(); Stream bodyStream = ctx.createStream();
                DeviceBuffer in = ctx.allocate(4L * N); DeviceBuffer v = ctx.allocate(4L * N);
                DeviceBuffer x = ctx.allocate(4L * N); DeviceBuffer rounds = ctx.allocate(4);
                DeviceBuffer counter = ctx.allocate(4); DeviceBuffer arrivals = ctx.allocate(4)) {
            Graph graph;
            ConditionalNode loop;
            try (StreamCapture capture = s.beginCapture(CaptureMode.GLOBAL)) {
                ConditionalHandle h = capture.createConditionalHandleSetByKernels();
                s.copy(x.asFloats(), in.asFloats());
                s.fill(arrivals.asInts(), 0);
                loopOpen.prepare(LaunchConfig.of(1, 32), KernelArg.pointer(counter), KernelArg.pointer(rounds),
                        h.asKernelArg()).launch(s);
                loop = capture.addWhile(h);
                try (StreamCapture body = loop.body().beginCapture(bodyStream, CaptureMode.GLOBAL)) {
                    loopBody.prepare(LaunchConfig.covering(N, THREADS), KernelArg.pointer(x), KernelArg.pointer(v),
                            KernelArg.i32(N), KernelArg.pointer(counter), KernelArg.pointer(arrivals), h.asKernelArg())
                            .launch(bodyStream);
                    assertSame(loop.body(), body.end());
                }
                scaled(x, 2f).launch(s); // after the loop
                graph = capture.end();
            }
            List<GraphNode.Kind> kinds = graph.nodes().stream().map(GraphNode::kind).toList();
            assertEquals(1, kinds.stream().filter(k -> k == GraphNode.Kind.CONDITIONAL).count(), "kinds " + kinds);
            assertEquals(List.of(GraphNode.Kind.KERNEL), loop.body().nodes().stream().map(GraphNode::kind).toList());
            StringBuilder ran = new StringBuilder();
            try (GraphExec exec = graph.instantiate()) {
                for (int replay = 0; replay < REPLAYS; replay++) {
                    int k = replay == 0 ? 0 : 1 + r.nextInt(20); // the first replay: no round at all
                    float[] hostIn = randomFloats(r);
                    float[] hostV = randomFloats(r);
                    in.asFloats().copyFrom(hostIn);
                    v.asFloats().copyFrom(hostV);
                    rounds.asInts().copyFrom(new int[] {k});
                    s.fill(x.asInts(), POISON);
                    s.fill(counter.asInts(), POISON);
                    exec.launch(s);
                    float[] expected = hostIn.clone();
                    for (int round = 0; round < k; round++) { // the CPU loop: the same float additions in order
                        for (int i = 0; i < N; i++) {
                            expected[i] += hostV[i];
                        }
                    }
                    for (int i = 0; i < N; i++) {
                        expected[i] *= 2f;
                    }
                    String where = "k=" + k + " replay " + replay + " seed=" + seed;
                    assertArrayEquals(expected, read(x), where);
                    int[] left = {-1};
                    counter.asInts().copyTo(left);
                    assertEquals(0, left[0], "the counter reached 0; " + where);
                    ran.append(ran.isEmpty() ? "" : ",").append(k);
                }
            }
            graph.close();
            System.out.println("CAPTURED-CONDITIONAL while: " + REPLAYS + " replays match the CPU, rounds " + ran
                    + ", seed=" + seed);
        }
    }

    @Test
    void aCapturedIfRunsItsBodyOnlyWhenTheCapturedKernelSetTheHandleFromTheData() {
        long seed = Gpu.seed();
        Random r = Gpu.random(seed);
        float a = 1.5f + r.nextInt(8);
        float b = -0.5f - r.nextInt(8);
        try (Stream s = ctx.createStream(); Stream bodyStream = ctx.createStream();
                DeviceBuffer data = ctx.allocate(4L * N); DeviceBuffer in = ctx.allocate(4L * N);
                DeviceBuffer x = ctx.allocate(4L * N)) {
            Graph graph;
            try (StreamCapture capture = s.beginCapture(CaptureMode.GLOBAL)) {
                ConditionalHandle h = capture.createConditionalHandle(0);
                s.copy(x.asFloats(), in.asFloats());
                decide.prepare(LaunchConfig.of(1, 32), KernelArg.pointer(data), h.asKernelArg()).launch(s);
                ConditionalNode branch = capture.addIf(h);
                try (StreamCapture body = branch.body().beginCapture(bodyStream, CaptureMode.GLOBAL)) {
                    scaled(x, a).launch(bodyStream);
                    body.end();
                }
                shift.prepare(LaunchConfig.covering(N, THREADS), KernelArg.pointer(x), KernelArg.f32(b),
                        KernelArg.i32(N)).launch(s); // after the IF
                graph = capture.end();
            }
            int taken = 0;
            try (GraphExec exec = graph.instantiate()) {
                for (int replay = 0; replay < REPLAYS; replay++) {
                    boolean take = replay < 2 ? replay == 0 : r.nextBoolean(); // both branches, then at random
                    float[] hostData = randomFloats(r);
                    hostData[0] = take ? 1 + r.nextFloat() : -1 - r.nextFloat();
                    float[] hostIn = randomFloats(r);
                    data.asFloats().copyFrom(hostData);
                    in.asFloats().copyFrom(hostIn);
                    s.fill(x.asInts(), POISON);
                    exec.launch(s);
                    float[] expected = new float[N];
                    for (int i = 0; i < N; i++) {
                        expected[i] = (take ? hostIn[i] * a : hostIn[i]) + b;
                    }
                    assertArrayEquals(expected, read(x), "taken=" + take + " replay " + replay + " seed=" + seed);
                    taken += take ? 1 : 0;
                }
            }
            graph.close();
            System.out.println("CAPTURED-CONDITIONAL if: " + REPLAYS + " replays match the CPU, body taken " + taken
                    + " times, seed=" + seed);
        }
    }

    private static KernelLaunch scaled(DeviceBuffer target, float factor) {
        return scale.prepare(LaunchConfig.covering(N, THREADS), KernelArg.pointer(target), KernelArg.f32(factor),
                KernelArg.i32(N));
    }

    private static float[] randomFloats(Random r) {
        float[] out = new float[N];
        for (int i = 0; i < N; i++) {
            out[i] = r.nextFloat() * 200 - 100;
        }
        return out;
    }

    private static float[] read(DeviceBuffer b) {
        float[] out = new float[N];
        Arrays.fill(out, Float.NaN);
        b.asFloats().copyTo(out);
        return out;
    }
}
