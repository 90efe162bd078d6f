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
 * Conditional graph nodes on the H200, with kernels compiled by NVRTC against
 * {@code gatun_conditional.cuh} (loaded as PTX, no device runtime library linked): a WHILE loop
 * whose body kernel adds to every element and counts the rounds down, the last block ending the
 * loop at 0; an IF node and an IF/ELSE node whose handle a kernel sets from data, both branches.
 * Random inputs, poisoned outputs, each executable replayed twice, compared with CPU loops.
 *
 * <p>The same inside a stream capture, in the shape of NVIDIA's graphConditionalNodes sample: the
 * handle is created in the graph being captured ({@code cuStreamGetCaptureInfo_v3}), a captured
 * kernel sets it, the conditional node is added after the capture's dependencies and made its only
 * one ({@code cuStreamUpdateCaptureDependencies_v2}), and its body is captured on a second stream
 * ({@code cuStreamBeginCaptureToGraph}). {@code capturedWhileGraph}: a kernel captured before the
 * loop reads the round count from device memory into the counter and sets the handle to
 * (counter != 0); the WHILE body ({@code round_step}) adds {@code v} to every element and its last
 * block counts down and sets the handle to (counter != 0); a kernel captured after the loop doubles
 * every element (it must wait for the loop). A captured IF: a kernel sets the handle from random
 * data, the body scales, a kernel after it adds. Each executable is replayed six times with fresh
 * random inputs and round counts (0 included), outputs poisoned first; each of these two tests
 * prints one {@code CAPTURED-CONDITIONAL} line with the replays, the rounds and the branches taken.
 */
@RequiresGpu
class ConditionalGpuTest {

    private static final String MODULE = "conditional-nodes";
    private static final String SOURCE = """
            #include "gatun_conditional.cuh"

            // One round of the loop: x[i] += v[i]; once the whole grid is done, the last block counts
            // the rounds down and ends the loop when none is left.
            extern "C" __global__ void round_step(float* x, const float* v, int n, unsigned int* rounds,
                                                  unsigned int* arrivals, cudaGraphConditionalHandle loop) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) x[i] += v[i];
                if (gatun_last_block(arrivals)) {
                    unsigned int left = *rounds - 1u;
                    *rounds = left;
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

            // Before a captured loop: the counter takes the rounds asked for, and the loop runs when there are any.
            extern "C" __global__ void loop_open(unsigned int* rounds, const unsigned int* asked,
                                                 cudaGraphConditionalHandle loop) {
                if (blockIdx.x == 0 && threadIdx.x == 0) {
                    unsigned int k = *asked;
                    *rounds = k;
                    gatun_conditional_set(loop, k != 0u);
                }
            }
            """;
    private static final int POISON = 0x7FC0DEAD; // a NaN: never equal to a computed value
    private static final int N = 10_007;
    private static final int THREADS = 128;
    private static final int REPLAYS = 6;

    private static CudaContext ctx;
    private static Kernel roundStep;
    private static Kernel decide;
    private static Kernel scale;
    private static Kernel shift;
    private static Kernel loopOpen;

    @BeforeAll
    static void compile() {
        ctx = Gpu.context();
        NvrtcLibrary.system().compiler().load(ctx.modules(), MODULE, SOURCE,
                CompileOptions.builder(CompileTarget.cubin(ctx.device().capabilities())).programName("conditional.cu")
                        .includeDirectory(CudaGraphs.conditionalIncludeDirectory()).build(),
                "round_step", "decide", "scale", "shift", "loop_open");
        roundStep = ctx.modules().kernel(MODULE, "round_step");
        decide = ctx.modules().kernel(MODULE, "decide");
        scale = ctx.modules().kernel(MODULE, "scale");
        shift = ctx.modules().kernel(MODULE, "shift");
        loopOpen = ctx.modules().kernel(MODULE, "loop_open");
    }

    @AfterAll
    static void unload() {
        roundStep.close();
        decide.close();
        scale.close();
        shift.close();
        loopOpen.close();
        ctx.modules().unload(MODULE);
    }

    @Test
    void aWhileLoopRunsItsBodyUntilTheLastBlockEndsIt() {
        long seed = Gpu.seed();
        Random r = Gpu.random(seed);
        try (Stream s = ctx.createStream(); DeviceBuffer in = ctx.allocate(4L * N); DeviceBuffer v = ctx.allocate(4L * N);
                DeviceBuffer x = ctx.allocate(4L * N); DeviceBuffer rounds = ctx.allocate(4);
                DeviceBuffer arrivals = ctx.allocate(4); Graph g = ctx.createGraph()) {
            // Each launch: x = in, rounds = k, arrivals = 0, then WHILE (starts at 1) { round_step }.
            int k = 1 + r.nextInt(24);
            GraphNode copy = g.addCopy(x.asFloats(), in.asFloats());
            GraphNode count = g.addFill(rounds.asInts(), k, copy);
            GraphNode clear = g.addFill(arrivals.asInts(), 0, count);
            ConditionalHandle loop = g.createConditionalHandle(1);
            ConditionalNode node = g.addWhile(loop, clear);
            node.body().addKernel(roundStep.prepare(LaunchConfig.covering(N, THREADS), KernelArg.pointer(x),
                    KernelArg.pointer(v), KernelArg.i32(N), KernelArg.pointer(rounds), KernelArg.pointer(arrivals),
                    loop.asKernelArg()));
            try (GraphExec exec = g.instantiate()) {
                for (int replay = 0; replay < 2; replay++) {
                    float[] hostIn = randomFloats(r);
                    float[] hostV = randomFloats(r);
                    in.asFloats().copyFrom(hostIn);
                    v.asFloats().copyFrom(hostV);
                    s.fill(x.asInts(), POISON);
                    exec.launch(s);
                    float[] expected = plusRounds(hostIn, hostV, k);
                    assertArrayEquals(expected, read(x), "k=" + k + " replay " + replay + " seed=" + seed);
                    int[] left = {-1};
                    rounds.asInts().copyTo(left);
                    assertEquals(0, left[0], "the loop ran until no round was left; seed=" + seed);
                    int[] arrived = {-1};
                    arrivals.asInts().copyTo(arrived);
                    assertEquals(0, arrived[0], "the last block of every round reset the arrivals; seed=" + seed);
                }
            }
        }
    }

    @Test
    void anIfNodeAndAnIfElseNodeFollowTheValueAKernelSetFromData() {
        long seed = Gpu.seed();
        Random r = Gpu.random(seed);
        float a = 1.5f + r.nextInt(8);
        float b = -0.5f - r.nextInt(8);
        try (Stream s = ctx.createStream(); DeviceBuffer data = ctx.allocate(4L * N); DeviceBuffer in = ctx.allocate(4L * N);
                DeviceBuffer x = ctx.allocate(4L * N); DeviceBuffer y = ctx.allocate(4L * N);
                Graph g = ctx.createGraph()) {
            // x = in; y = in; decide(data); IF { x *= a }; IF/ELSE { y *= a } ELSE { y *= b }.
            GraphNode copyX = g.addCopy(x.asFloats(), in.asFloats());
            GraphNode copyY = g.addCopy(y.asFloats(), in.asFloats());
            ConditionalHandle branch = g.createConditionalHandle(0);
            GraphNode decided = g.addKernel(decide.prepare(LaunchConfig.of(1, 32), KernelArg.pointer(data),
                    branch.asKernelArg()), copyX, copyY);
            ConditionalHandle branchElse = g.createConditionalHandle(0);
            GraphNode decidedElse = g.addKernel(decide.prepare(LaunchConfig.of(1, 32), KernelArg.pointer(data),
                    branchElse.asKernelArg()), copyX, copyY);
            g.addIf(branch, decided).body().addKernel(scaled(x, a));
            ConditionalNode ifElse = g.addIfElse(branchElse, decidedElse);
            ifElse.bodies().get(0).addKernel(scaled(y, a));
            ifElse.bodies().get(1).addKernel(scaled(y, b));
            try (GraphExec exec = g.instantiate()) {
                for (int replay = 0; replay < 2; replay++) {
                    for (boolean taken : new boolean[] {true, false}) {
                        float[] hostData = randomFloats(r);
                        hostData[0] = taken ? 1 + r.nextFloat() : -1 - r.nextFloat();
                        float[] hostIn = randomFloats(r);
                        data.asFloats().copyFrom(hostData);
                        in.asFloats().copyFrom(hostIn);
                        s.fill(x.asInts(), POISON);
                        s.fill(y.asInts(), POISON);
                        exec.launch(s);
                        String where = "taken=" + taken + " replay " + replay + " seed=" + seed;
                        assertArrayEquals(taken ? times(hostIn, a) : hostIn, read(x), "IF: " + where);
                        assertArrayEquals(times(hostIn, taken ? a : b), read(y), "IF/ELSE: " + where);
                    }
                }
            }
        }
    }

    @Test
    void aCapturedWhileLoopMatchesTheCpuOnEveryReplay() {
        long seed = Gpu.seed();
        Random r = Gpu.random(seed);
        try (Stream s = ctx.createStream(); Stream bodyStream = ctx.createStream();
                DeviceBuffer in = ctx.allocate(4L * N); DeviceBuffer v = ctx.allocate(4L * N);
                DeviceBuffer x = ctx.allocate(4L * N); DeviceBuffer asked = ctx.allocate(4);
                DeviceBuffer rounds = ctx.allocate(4); DeviceBuffer arrivals = ctx.allocate(4)) {
            Graph graph;
            ConditionalNode loop;
            try (StreamCapture capture = s.beginCapture(CaptureMode.GLOBAL)) {
                ConditionalHandle h = capture.createConditionalHandleSetByKernels();
                s.copy(x.asFloats(), in.asFloats());
                s.fill(arrivals.asInts(), 0);
                loopOpen.prepare(LaunchConfig.of(1, 32), KernelArg.pointer(rounds), KernelArg.pointer(asked),
                        h.asKernelArg()).launch(s);
                loop = capture.addWhile(h);
                try (StreamCapture body = loop.body().beginCapture(bodyStream, CaptureMode.GLOBAL)) {
                    roundStep.prepare(LaunchConfig.covering(N, THREADS), KernelArg.pointer(x), KernelArg.pointer(v),
                            KernelArg.i32(N), KernelArg.pointer(rounds), KernelArg.pointer(arrivals), h.asKernelArg())
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
                    asked.asInts().copyFrom(new int[] {k});
                    s.fill(x.asInts(), POISON);
                    s.fill(rounds.asInts(), POISON);
                    exec.launch(s);
                    float[] expected = times(plusRounds(hostIn, hostV, k), 2f);
                    String where = "k=" + k + " replay " + replay + " seed=" + seed;
                    assertArrayEquals(expected, read(x), where);
                    int[] left = {-1};
                    rounds.asInts().copyTo(left);
                    assertEquals(0, left[0], "the loop ran until no round was left; " + where);
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

    /** The CPU loop: {@code k} rounds of {@code x[i] += v[i]}, the same float additions in the same order. */
    private static float[] plusRounds(float[] in, float[] v, int k) {
        float[] out = in.clone();
        for (int round = 0; round < k; round++) {
            for (int i = 0; i < N; i++) {
                out[i] += v[i];
            }
        }
        return out;
    }

    private static float[] times(float[] in, float factor) {
        float[] out = new float[in.length];
        for (int i = 0; i < in.length; i++) {
            out[i] = in[i] * factor;
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
