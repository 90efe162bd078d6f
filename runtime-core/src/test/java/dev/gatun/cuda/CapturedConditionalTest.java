package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.FakeKernel;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Conditional nodes inside a stream capture on the simulated driver, in the shape of NVIDIA's
 * graphConditionalNodes sample: a handle created in the graph being captured, a captured kernel
 * that sets it, a conditional node added after the capture's dependencies and made its only
 * dependency, and the body captured on another stream ({@link Graph#beginCapture}). The simulator
 * records every capture into a graph, orders a graph's nodes as far from their capture order as
 * their dependencies allow, and records a violation for a node added after stale dependencies or
 * work captured before the node became the capture's dependency, so a wrong order shows as a wrong
 * result or a violation. Also: what the graph holds for its bodies, what a body capture refuses
 * before the driver, failures part way, an invalidated capture, an old driver.
 */
class CapturedConditionalTest {

    private static final int N = AddKernelFixture.N;

    private final AddKernelFixture f = new AddKernelFixture(new FakeDriverApi());
    private final Simulated sim = f.sim;
    private final CudaContext ctx = f.ctx;
    private final Stream stream = f.stream;
    private final Stream side = ctx.createStream();
    private final Kernel twice;
    private final Kernel open;
    private final Kernel step;
    private final Kernel decide;

    CapturedConditionalTest() {
        sim.gpu.kernelBody("twice", l -> { // twice(p, n): p[i] *= 2 (does not commute with add)
            var p = l.memory(l.pointer(0), 4L * l.i32(1));
            for (int i = 0; i < l.i32(1); i++) {
                p.setAtIndex(ValueLayout.JAVA_INT, i, 2 * p.getAtIndex(ValueLayout.JAVA_INT, i));
            }
        });
        sim.gpu.kernelBody("open", l -> { // open(counter, rounds, handle): *counter = rounds; handle = rounds != 0
            l.memory(l.pointer(0), 4).set(ValueLayout.JAVA_INT, 0, l.i32(1));
            l.setConditional(l.i64(2), l.i32(1) != 0 ? 1 : 0);
        });
        sim.gpu.kernelBody("step", FakeKernel.STEP);
        sim.gpu.kernelBody("decide", FakeKernel.DECIDE);
        ctx.modules().load("t", ModuleImage.ptx("twice.ptx", Ptx.module("twice", "u64", "u32")));
        ctx.modules().load("o", ModuleImage.ptx("open.ptx", Ptx.module("open", "u64", "u32", "u64")));
        ctx.modules().load("s", ModuleImage.ptx("step.ptx", Ptx.module("step", "u64", "u32", "u32", "u64", "u64")));
        ctx.modules().load("d", ModuleImage.ptx("decide.ptx", Ptx.module("decide", "u64", "u64")));
        twice = ctx.modules().kernel("t", "twice");
        open = ctx.modules().kernel("o", "open");
        step = ctx.modules().kernel("s", "step");
        decide = ctx.modules().kernel("d", "decide");
    }

    @AfterEach
    void nothingLeftOrMisused() {
        for (Kernel k : List.of(twice, open, step, decide)) {
            k.close();
        }
        side.close();
        f.close(); // the context refuses to close while a graph, executable or buffer is open; no violations
    }

    private KernelLaunch plus(DeviceBuffer v, int value) {
        return f.launch(v, value);
    }

    private KernelLaunch doubled(DeviceBuffer v) {
        return twice.prepare(LaunchConfig.of(1, N), KernelArg.pointer(v), KernelArg.i32(N));
    }

    private static int[] read(DeviceBuffer b) {
        return AddKernelFixture.read(b);
    }

    private static void poison(DeviceBuffer b) {
        b.asInts().copyFrom(AddKernelFixture.filled(0xDEAD));
    }

    @Test
    void aCapturedWhileLoopRunsItsCapturedBodyUntilTheCounterIsZeroOnEveryReplay() {
        int rounds = 6;
        int v = 7;
        try (DeviceBuffer in = ctx.allocate(4 * N); DeviceBuffer out = ctx.allocate(4 * N);
                DeviceBuffer counter = ctx.allocate(4)) {
            Graph graph;
            ConditionalHandle h;
            ConditionalNode loop;
            try (StreamCapture capture = stream.beginCapture(CaptureMode.GLOBAL)) {
                h = capture.createConditionalHandleSetByKernels();
                stream.copy(out.asInts(), in.asInts());
                open.prepare(LaunchConfig.of(1, 1), KernelArg.pointer(counter), KernelArg.i32(rounds), h.asKernelArg())
                        .launch(stream); // the kernel before the loop sets the handle
                loop = capture.addWhile(h);
                assertEquals(ConditionalNode.Type.WHILE, loop.type());
                try (StreamCapture body = loop.body().beginCapture(side, CaptureMode.GLOBAL)) {
                    step.prepare(LaunchConfig.of(1, N), KernelArg.pointer(out), KernelArg.i32(N), KernelArg.i32(v),
                            KernelArg.pointer(counter), h.asKernelArg()).launch(side);
                    assertSame(loop.body(), body.end(), "the work went into the body");
                }
                doubled(out).launch(stream); // after the loop: runs only once the loop is over
                graph = capture.end();
            }
            assertSame(h.graph(), graph, "the handle's graph is the captured one");
            assertSame(graph, loop.node().graph());
            List<GraphNode> nodes = graph.nodes();
            assertEquals(4, nodes.size(), "copy, open, the loop and twice");
            assertEquals(GraphNode.Kind.CONDITIONAL, nodes.get(2).kind());
            assertEquals(List.of(GraphNode.Kind.KERNEL), loop.body().nodes().stream().map(GraphNode::kind).toList());
            Random random = new Random(23);
            try (GraphExec exec = graph.instantiate()) {
                for (int replay = 0; replay < 3; replay++) {
                    int[] input = random.ints(N, -1000, 1000).toArray();
                    in.asInts().copyFrom(input);
                    poison(out);
                    counter.asInts().copyFrom(new int[] {0xDEAD});
                    exec.launch(stream);
                    int[] expected = Arrays.stream(input).map(x -> 2 * (x + rounds * v)).toArray(); // the CPU loop
                    assertArrayEquals(expected, read(out), "replay " + replay);
                    int[] left = new int[1];
                    counter.asInts().copyTo(left);
                    assertEquals(0, left[0], "the loop ran until the counter reached 0");
                }
            }
            graph.close();
        }
    }

    @Test
    void aCapturedIfRunsItsBodyOnlyWhenTheCapturedKernelSetTheHandleFromTheData() {
        try (DeviceBuffer a = ctx.allocate(4 * N); DeviceBuffer flag = ctx.allocate(4)) {
            Graph graph;
            try (StreamCapture capture = stream.beginCapture(CaptureMode.THREAD_LOCAL)) {
                ConditionalHandle h = capture.createConditionalHandle(0);
                decide.prepare(LaunchConfig.of(1, 1), KernelArg.pointer(flag), h.asKernelArg()).launch(stream);
                ConditionalNode branch = capture.addIf(h);
                try (StreamCapture body = branch.body().beginCapture(side, CaptureMode.THREAD_LOCAL)) {
                    plus(a, 5).launch(side);
                    body.end();
                }
                doubled(a).launch(stream);
                graph = capture.end();
            }
            Random random = new Random(5);
            try (GraphExec exec = graph.instantiate()) {
                for (int replay = 0; replay < 6; replay++) {
                    int[] start = random.ints(N, -100, 100).toArray();
                    int taken = random.nextInt(3); // 0: not taken; 1 and 2: taken
                    a.asInts().copyFrom(start);
                    flag.asInts().copyFrom(new int[] {taken});
                    exec.launch(stream);
                    int[] expected = Arrays.stream(start).map(x -> 2 * (taken != 0 ? x + 5 : x)).toArray();
                    assertArrayEquals(expected, read(a), "replay " + replay + ", flag " + taken);
                }
            }
            graph.close();
        }
    }

    @Test
    void aCapturedIfElseAndANestedConditionalInsideACapturedBody() {
        try (DeviceBuffer a = ctx.allocate(4 * N); DeviceBuffer flag = ctx.allocate(4);
                DeviceBuffer inner = ctx.allocate(4)) {
            Graph graph;
            try (StreamCapture capture = stream.beginCapture(CaptureMode.RELAXED)) {
                ConditionalHandle h = capture.createConditionalHandle(0);
                decide.prepare(LaunchConfig.of(1, 1), KernelArg.pointer(flag), h.asKernelArg()).launch(stream);
                ConditionalNode branch = capture.addIfElse(h);
                try (StreamCapture then = branch.bodies().get(0).beginCapture(side, CaptureMode.RELAXED)) {
                    plus(a, 1).launch(side);
                    // Nested: a handle of the body, set by a kernel of the body, and an IF inside it.
                    ConditionalHandle g = then.createConditionalHandle(0);
                    assertSame(branch.bodies().get(0), g.graph());
                    decide.prepare(LaunchConfig.of(1, 1), KernelArg.pointer(inner), g.asKernelArg()).launch(side);
                    ConditionalNode nested = then.addIf(g);
                    nested.body().addKernel(plus(a, 1000));
                    doubled(a).launch(side); // after the nested IF
                    then.end();
                }
                try (StreamCapture otherwise = branch.bodies().get(1).beginCapture(side, CaptureMode.RELAXED)) {
                    plus(a, 100).launch(side);
                    otherwise.end();
                }
                graph = capture.end();
            }
            try (GraphExec exec = graph.instantiate()) {
                int[] start = new Random(9).ints(N, -100, 100).toArray();
                for (int[] flags : new int[][] {{1, 0}, {1, 1}, {0, 1}}) {
                    a.asInts().copyFrom(start);
                    flag.asInts().copyFrom(new int[] {flags[0]});
                    inner.asInts().copyFrom(new int[] {flags[1]});
                    exec.launch(stream);
                    int[] expected = Arrays.stream(start)
                            .map(x -> flags[0] != 0 ? 2 * (x + 1 + (flags[1] != 0 ? 1000 : 0)) : x + 100).toArray();
                    assertArrayEquals(expected, read(a), "flags " + Arrays.toString(flags));
                }
            }
            graph.close();
        }
    }

    @Test
    void theGraphHoldsWhatItsCapturedBodyUsesUntilItIsGone() {
        DeviceBuffer a = ctx.allocate(4 * N);
        DeviceBuffer b = ctx.allocate(4 * N);
        Graph graph;
        try (StreamCapture capture = stream.beginCapture(CaptureMode.GLOBAL)) {
            ConditionalHandle h = capture.createConditionalHandle(1); // always taken
            ConditionalNode branch = capture.addIf(h);
            try (StreamCapture body = branch.body().beginCapture(side, CaptureMode.GLOBAL)) {
                stream.memset(a.bytes(), (byte) 0); // on the outer capture meanwhile
                side.copy(b.asInts(), a.asInts());
                plus(b, 3).launch(side);
                body.end();
            }
            graph = capture.end();
        }
        long allocations = sim.gpu.liveDeviceAllocations();
        b.close(); // used only in the body: the graph holds it
        ctx.reap();
        assertEquals(allocations, sim.gpu.liveDeviceAllocations(), "b lives on, held by the graph");
        try (GraphExec exec = graph.instantiate()) {
            exec.launch(stream);
            stream.synchronize();
        }
        graph.close();
        ctx.reap();
        assertEquals(allocations - 1, sim.gpu.liveDeviceAllocations(), "b was freed with the graph");
        a.close();
    }

    @Test
    void aCaptureIntoABodyRefusesWhatTheDriverRefusesInOneBeforeAnyDriverCall() {
        try (DeviceBuffer a = ctx.allocate(4 * N); Graph g = ctx.createGraph()) {
            ConditionalHandle h = g.createConditionalHandle(1);
            ConditionalNode branch = g.addIf(h);
            try (StreamCapture body = branch.body().beginCapture(side, CaptureMode.THREAD_LOCAL)) {
                sim.faults.countCalls();
                IllegalStateException alloc = assertThrows(IllegalStateException.class, () -> side.allocate(64));
                assertTrue(alloc.getMessage().contains("no memory allocation node in a conditional body"),
                        alloc.getMessage());
                IllegalStateException host = assertThrows(IllegalStateException.class,
                        () -> side.launchHostFunction(() -> { }));
                assertTrue(host.getMessage().contains("no host node in a conditional body"), host.getMessage());
                IllegalStateException memOp = assertThrows(IllegalStateException.class,
                        () -> side.memOps().write32(a.asInts().slice(0, 1), 1, WriteFlag.DEFAULT));
                assertTrue(memOp.getMessage().contains("no stream memory operation node"), memOp.getMessage());
                assertEquals(0, sim.faults.calls("cuMemAllocAsync") + sim.faults.calls("cuLaunchHostFunc")
                        + sim.faults.calls("cuStreamWriteValue32_v2"), "refused before the driver");
                IllegalStateException twiceInto = assertThrows(IllegalStateException.class,
                        () -> branch.body().beginCapture(stream, CaptureMode.THREAD_LOCAL));
                assertTrue(twiceInto.getMessage().contains("records into"), twiceInto.getMessage());
                IllegalStateException early = assertThrows(IllegalStateException.class, g::instantiate);
                assertTrue(early.getMessage().contains("still records into"), early.getMessage());
                plus(a, 1).launch(side); // still capturing
                body.end();
            }
            IllegalStateException notBody = assertThrows(IllegalStateException.class,
                    () -> g.beginCapture(stream, CaptureMode.THREAD_LOCAL));
            assertTrue(notBody.getMessage().contains("is not a conditional node's body"), notBody.getMessage());
            try (GraphExec exec = g.instantiate()) {
                poison(a);
                exec.launch(stream);
                assertArrayEquals(Arrays.stream(new int[N]).map(x -> 0xDEAD + 1).toArray(), read(a));
            }
        }
    }

    @Test
    void anEmptyCapturedBodyAndAnAbortedOneAreRefusedAtInstantiation() {
        try (DeviceBuffer a = ctx.allocate(4 * N); Graph g = ctx.createGraph()) {
            ConditionalNode first = g.addIf(g.createConditionalHandle(1));
            try (StreamCapture body = first.body().beginCapture(side, CaptureMode.THREAD_LOCAL)) {
                body.end(); // nothing captured
            }
            IllegalStateException empty = assertThrows(IllegalStateException.class, g::instantiate);
            assertTrue(empty.getMessage().contains("has no nodes"), empty.getMessage());
            first.body().addMemset(a.bytes(), (byte) 1);
            ConditionalNode second = g.addIf(g.createConditionalHandle(1));
            try (StreamCapture body = second.body().beginCapture(side, CaptureMode.THREAD_LOCAL)) {
                plus(a, 1).launch(side);
                body.abort();
            }
            assertTrue(side.query(), "the side stream stopped capturing");
            IllegalStateException aborted = assertThrows(IllegalStateException.class, g::instantiate);
            assertTrue(aborted.getMessage().contains("was aborted"), aborted.getMessage());
        }
    }

    @Test
    void aCaptureWithConditionalNodesAndGraphMemoryIsRefusedEitherWay() {
        try (StreamCapture capture = stream.beginCapture(CaptureMode.THREAD_LOCAL)) {
            capture.createConditionalHandle(1);
            IllegalStateException after = assertThrows(IllegalStateException.class, () -> stream.allocate(64));
            assertTrue(after.getMessage().contains("does not mix those with allocations"), after.getMessage());
            capture.abort();
        }
        try (StreamCapture capture = stream.beginCapture(CaptureMode.THREAD_LOCAL)) {
            DeviceBuffer scratch = stream.allocate(64);
            IllegalStateException before = assertThrows(IllegalStateException.class,
                    () -> capture.createConditionalHandle(1));
            assertTrue(before.getMessage().contains("allocated on its stream"), before.getMessage());
            capture.abort();
            assertTrue(scratch.isClosed());
        }
        StreamCapture over = stream.beginCapture(CaptureMode.THREAD_LOCAL);
        over.abort();
        IllegalStateException ended = assertThrows(IllegalStateException.class, () -> over.createConditionalHandle(1));
        assertTrue(ended.getMessage().contains("it is over"), ended.getMessage());
    }

    @Test
    void anInvalidatedCaptureWithAConditionalNodeLeavesNothingBehind() {
        try (DeviceBuffer a = ctx.allocate(4 * N)) {
            StreamCapture capture = stream.beginCapture(CaptureMode.THREAD_LOCAL);
            ConditionalHandle h = capture.createConditionalHandle(1);
            ConditionalNode branch = capture.addIf(h);
            branch.body().addKernel(plus(a, 1));
            sim.gpu.invalidateCapture(stream.handle());
            IllegalStateException refused = assertThrows(IllegalStateException.class, () -> capture.addIf(h));
            assertTrue(refused.getMessage().contains("invalidated"), refused.getMessage());
            assertThrows(CaptureInvalidatedException.class, capture::end);
            assertTrue(h.graph().isClosed(), "the graph the driver destroyed is closed");
            assertThrows(IllegalStateException.class, () -> branch.body().addKernel(plus(a, 1)));
            ctx.reap();
            assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.GRAPH));
        }
    }

    @Test
    void anAbortedCaptureDestroysTheGraphItsConditionalNodeWentInto() {
        try (DeviceBuffer a = ctx.allocate(4 * N)) {
            try (StreamCapture capture = stream.beginCapture(CaptureMode.THREAD_LOCAL);
                    Graph parent = ctx.createGraph()) {
                ConditionalHandle h = capture.createConditionalHandle(1);
                IllegalArgumentException asChild = assertThrows(IllegalArgumentException.class,
                        () -> parent.addChild(h.graph()));
                assertTrue(asChild.getMessage().contains("still records into"), asChild.getMessage());
                capture.addWhile(h).body().addKernel(plus(a, 1));
                int graphs = sim.gpu.liveGraphs();
                h.graph().close(); // closing it while the capture records into it destroys nothing yet
                ctx.reap();
                assertEquals(graphs, sim.gpu.liveGraphs(), "nothing destroyed");
                plus(a, 1).launch(stream);
            } // aborts
            ctx.reap();
            assertEquals(0, sim.gpu.liveGraphs());
        }
    }

    @Test
    void aConditionalNodeWhoseDependencyUpdateFailedMakesTheGraphUnusable() {
        try (StreamCapture capture = stream.beginCapture(CaptureMode.THREAD_LOCAL)) {
            ConditionalHandle h = capture.createConditionalHandle(1);
            sim.faults.replaceOnce("cuStreamUpdateCaptureDependencies_v2", CudaDriver.CUDA_ERROR_INVALID_VALUE());
            CudaException e = assertThrows(CudaException.class, () -> capture.addWhile(h));
            assertEquals(CudaDriver.CUDA_ERROR_INVALID_VALUE(), e.result());
            IllegalStateException refused = assertThrows(IllegalStateException.class, h.graph()::instantiate);
            assertTrue(refused.getMessage().contains("could not be made the capture's dependency"), refused.getMessage());
        } // aborts
    }

    @Test
    void anOldDriverIsRefusedBeforeAnyCall() {
        Simulated old = new Simulated(new FakeDriverApi().version(12020));
        CudaContext c = old.context();
        try (Stream s = c.createStream(); StreamCapture capture = s.beginCapture(CaptureMode.THREAD_LOCAL)) {
            old.faults.countCalls();
            DriverTooOldException e = assertThrows(DriverTooOldException.class, () -> capture.createConditionalHandle(1));
            assertEquals(12030, e.requiredVersion());
            assertEquals(0, old.faults.calls("cuStreamGetCaptureInfo_v3"));
        }
        c.close();
        assertEquals(List.of(), old.gpu.violations());
    }
}
