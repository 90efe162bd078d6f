package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.FakeKernel;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Conditional graph nodes on the simulated driver, which records each node and its bodies and
 * runs IF, IF/ELSE, WHILE and SWITCH bodies by the value its simulated kernels set: results on
 * every replay, nesting, what the graph holds for its bodies, body views owned by their graph,
 * and misuse (empty bodies, unused or foreign handles, an old driver) refused before any driver
 * call.
 */
class ConditionalNodeTest {

    private static final int N = 8;

    private final Simulated sim = new Simulated(new FakeDriverApi());
    private final CudaContext ctx = sim.context();
    private final Stream stream = ctx.createStream();
    private final Kernel add;
    private final Kernel step;
    private final Kernel decide;

    ConditionalNodeTest() {
        // add(p, n, v): p[i] += v.
        sim.gpu.kernelBody("add", FakeKernel.ADD);
        sim.gpu.kernelBody("step", FakeKernel.STEP);
        sim.gpu.kernelBody("decide", FakeKernel.DECIDE);
        ctx.modules().load("a", ModuleImage.ptx("add.ptx", Ptx.module("add", "u64", "u32", "u32")));
        ctx.modules().load("s", ModuleImage.ptx("step.ptx", Ptx.module("step", "u64", "u32", "u32", "u64", "u64")));
        ctx.modules().load("d", ModuleImage.ptx("decide.ptx", Ptx.module("decide", "u64", "u64")));
        add = ctx.modules().kernel("a", "add");
        step = ctx.modules().kernel("s", "step");
        decide = ctx.modules().kernel("d", "decide");
    }

    @AfterEach
    void nothingLeftOrMisused() {
        add.close();
        step.close();
        decide.close();
        stream.close();
        ctx.close(); // refuses while a graph, executable or buffer is still open
        assertEquals(List.of(), sim.gpu.violations());
        assertEquals(0, sim.gpu.liveGraphs(), "the bodies went with their graphs");
        assertEquals(0, sim.gpu.liveGraphExecs());
    }

    private KernelLaunch plus(DeviceBuffer v, int value) {
        return add.prepare(LaunchConfig.of(1, N), KernelArg.pointer(v), KernelArg.i32(N), KernelArg.i32(value));
    }

    private KernelLaunch decideFrom(DeviceBuffer flag, ConditionalHandle h) {
        return decide.prepare(LaunchConfig.of(1, 1), KernelArg.pointer(flag), h.asKernelArg());
    }

    private static int[] read(DeviceBuffer b) {
        int[] out = new int[N];
        b.asInts().copyTo(out);
        return out;
    }

    private static void poison(DeviceBuffer b) {
        int[] p = new int[N];
        Arrays.fill(p, 0xDEAD);
        b.asInts().copyFrom(p);
    }

    private static int[] plus(int[] a, int v) {
        return Arrays.stream(a).map(x -> x + v).toArray();
    }

    private static void setFlag(DeviceBuffer flag, int value) {
        flag.asInts().copyFrom(new int[] {value});
    }

    @Test
    void aWhileNodeRunsItsBodyUntilAKernelEndsTheLoopOnEveryLaunch() {
        int[] input = new Random(14).ints(N, -1000, 1000).toArray();
        int rounds = 5;
        int v = 7;
        try (DeviceBuffer in = ctx.allocate(4 * N); DeviceBuffer out = ctx.allocate(4 * N);
                DeviceBuffer counter = ctx.allocate(4); Graph g = ctx.createGraph()) {
            in.asInts().copyFrom(input);
            GraphNode copy = g.addCopy(out.asInts(), in.asInts());
            GraphNode count = g.addFill(counter.asInts(), rounds, copy);
            ConditionalHandle h = g.createConditionalHandle(1);
            ConditionalNode loop = g.addWhile(h, count);
            assertEquals(ConditionalNode.Type.WHILE, loop.type());
            assertEquals(GraphNode.Kind.CONDITIONAL, loop.node().kind());
            assertEquals(2, loop.node().index());
            assertSame(h, loop.handle());
            assertEquals(List.of(loop.body()), loop.bodies());
            GraphNode body = loop.body().addKernel(step.prepare(LaunchConfig.of(1, N), KernelArg.pointer(out),
                    KernelArg.i32(N), KernelArg.i32(v), KernelArg.pointer(counter), h.asKernelArg()));
            assertEquals(0, body.index(), "a body counts its own nodes");
            assertSame(loop.body(), body.graph());
            int[] expected = input.clone();
            for (int r = 0; r < rounds; r++) {
                expected = plus(expected, v); // the CPU loop
            }
            try (GraphExec exec = g.instantiate()) {
                for (int replay = 0; replay < 2; replay++) {
                    poison(out);
                    exec.launch(stream);
                    assertArrayEquals(expected, read(out), "replay " + replay);
                    int[] left = new int[1];
                    counter.asInts().copyTo(left);
                    assertEquals(0, left[0], "the loop ran until the counter reached 0");
                }
            }
        }
    }

    @Test
    void anIfNodeRunsItsBodyOnlyWhenAKernelSetTheHandle() {
        try (DeviceBuffer a = ctx.allocate(4 * N); DeviceBuffer flag = ctx.allocate(4); Graph g = ctx.createGraph()) {
            ConditionalHandle h = g.createConditionalHandle(0);
            GraphNode decided = g.addKernel(decideFrom(flag, h));
            ConditionalNode branch = g.addIf(h, decided);
            branch.body().addKernel(plus(a, 5));
            try (GraphExec exec = g.instantiate()) {
                for (int replay = 0; replay < 2; replay++) {
                    int[] start = new Random(replay).ints(N, 0, 100).toArray();
                    a.asInts().copyFrom(start);
                    setFlag(flag, 1);
                    exec.launch(stream);
                    assertArrayEquals(plus(start, 5), read(a), "taken, replay " + replay);
                    setFlag(flag, 0);
                    exec.launch(stream);
                    assertArrayEquals(plus(start, 5), read(a), "not taken, replay " + replay);
                }
            }
        }
    }

    @Test
    void anIfElseNodeRunsOneOfItsTwoBodies() {
        try (DeviceBuffer a = ctx.allocate(4 * N); DeviceBuffer flag = ctx.allocate(4); Graph g = ctx.createGraph()) {
            ConditionalHandle h = g.createConditionalHandle(0);
            ConditionalNode branch = g.addIfElse(h, g.addKernel(decideFrom(flag, h)));
            assertEquals(2, branch.bodies().size());
            branch.bodies().get(0).addKernel(plus(a, 1));
            branch.bodies().get(1).addKernel(plus(a, 100));
            assertTrue(branch.bodies().get(1).toString().startsWith("the ELSE body of CONDITIONAL node 1 of Graph#"),
                    branch.bodies().get(1).toString());
            try (GraphExec exec = g.instantiate()) {
                poison(a);
                setFlag(flag, 7);
                exec.launch(stream);
                assertArrayEquals(plus(filled(0xDEAD), 1), read(a));
                setFlag(flag, 0);
                exec.launch(stream);
                assertArrayEquals(plus(filled(0xDEAD), 101), read(a));
            }
        }
    }

    @Test
    void aSwitchNodeRunsTheBodyTheValueNamesAndNoneOutOfRange() {
        try (DeviceBuffer a = ctx.allocate(4 * N); DeviceBuffer flag = ctx.allocate(4); Graph g = ctx.createGraph()) {
            ConditionalHandle h = g.createConditionalHandle(0);
            ConditionalNode cases = g.addSwitch(h, 3, g.addKernel(decideFrom(flag, h)));
            for (int i = 0; i < 3; i++) {
                cases.bodies().get(i).addKernel(plus(a, 10 * (i + 1)));
            }
            try (GraphExec exec = g.instantiate()) {
                int total = 0;
                for (int value : new int[] {2, 0, 1, 3, -1}) {
                    poison(a);
                    setFlag(flag, value);
                    exec.launch(stream);
                    int added = value >= 0 && value < 3 ? 10 * (value + 1) : 0;
                    assertArrayEquals(plus(filled(0xDEAD), added), read(a), "value " + value);
                    total += added;
                }
                assertEquals(60, total, "each case ran once");
            }
            assertThrows(IllegalArgumentException.class, () -> g.addSwitch(h, 0));
        }
    }

    @Test
    void aWhileNodeInsideAnIfBodyUsesAHandleOfItsOwnBody() {
        try (DeviceBuffer a = ctx.allocate(4 * N); DeviceBuffer counter = ctx.allocate(4); Graph g = ctx.createGraph()) {
            ConditionalHandle outer = g.createConditionalHandle(1);
            Graph then = g.addIf(outer).body();
            ConditionalHandle inner = then.createConditionalHandle(1);
            GraphNode count = then.addFill(counter.asInts(), 3);
            Graph loop = then.addWhile(inner, count).body();
            loop.addKernel(step.prepare(LaunchConfig.of(1, N), KernelArg.pointer(a), KernelArg.i32(N), KernelArg.i32(2),
                    KernelArg.pointer(counter), inner.asKernelArg()));
            // A handle of the body is not the outer graph's: only that body and bodies inside it may use it.
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> g.addIf(inner));
            assertTrue(e.getMessage().contains("is not of Graph#"), e.getMessage());
            try (GraphExec exec = g.instantiate()) {
                poison(a);
                exec.launch(stream);
                assertArrayEquals(plus(filled(0xDEAD), 6), read(a), "three rounds of +2 inside the taken IF");
            }
        }
    }

    @Test
    void aHandleSetByKernelsKeepsItsValueUntilAKernelSetsIt() {
        try (DeviceBuffer a = ctx.allocate(4 * N); DeviceBuffer flag = ctx.allocate(4); Graph g = ctx.createGraph()) {
            ConditionalHandle h = g.createConditionalHandleSetByKernels();
            assertFalse(h.isAssignedEachLaunch());
            g.addIf(h, g.addKernel(decideFrom(flag, h))).body().addKernel(plus(a, 3));
            try (GraphExec exec = g.instantiate()) {
                poison(a);
                setFlag(flag, 1);
                exec.launch(stream);
                assertArrayEquals(plus(filled(0xDEAD), 3), read(a));
            }
        }
    }

    @Test
    void aGraphHoldsTheBuffersItsBodiesUse() {
        try (Graph g = ctx.createGraph()) {
            DeviceBuffer a = ctx.allocate(4 * N);
            poison(a);
            g.addIf(g.createConditionalHandle(1)).body().addKernel(plus(a, 1));
            try (GraphExec exec = g.instantiate()) {
                a.close(); // the graph still holds it: the body's kernel writes it
                assertEquals(1, sim.gpu.liveDeviceAllocations(), "held by the graph through its body");
                exec.launch(stream);
                stream.synchronize();
                assertEquals(List.of(), sim.gpu.violations(), "the buffer outlived the launch that used it");
            }
        }
        ctx.reap();
        assertEquals(0, sim.gpu.liveDeviceAllocations(), "freed once the graph and its executable are gone");
    }

    @Test
    void aBodyIsAViewItsGraphOwns(@TempDir Path dir) throws IOException {
        DeviceBuffer a = ctx.allocate(4 * N);
        Graph g = ctx.createGraph();
        ConditionalHandle h = g.createConditionalHandle(1);
        ConditionalNode loop = g.addIf(h);
        Graph body = loop.body();
        GraphNode inBody = body.addKernel(plus(a, 1));
        assertEquals(1, ctx.diagnostics().liveOwners(OwnerKind.GRAPH), "a body is not an owner of its own");
        int graphs = sim.gpu.liveGraphs();
        assertEquals(2, graphs, "the graph and its body");

        try (Event e = ctx.createEvent()) {
            IllegalStateException event = assertThrows(IllegalStateException.class, () -> body.addEventRecord(e));
            assertTrue(event.getMessage().contains("only kernel, memset, copy and conditional nodes"), event.getMessage());
        }
        IllegalStateException alone = assertThrows(IllegalStateException.class, body::instantiate);
        assertTrue(alone.getMessage().contains("instantiate the graph that holds its conditional node"), alone.getMessage());
        assertThrows(IllegalStateException.class, body::copy);
        body.writeDot(dir.resolve("body.dot"));
        assertTrue(Files.readString(dir.resolve("body.dot")).contains("KERNEL\\nadd"));
        g.writeDot(dir.resolve("graph.dot"));
        assertTrue(Files.readString(dir.resolve("graph.dot")).contains("CONDITIONAL"));

        try (GraphExec exec = g.instantiate()) {
            assertThrows(IllegalArgumentException.class, () -> exec.setEnabled(inBody, false));
            IllegalArgumentException conditional = assertThrows(IllegalArgumentException.class,
                    () -> exec.setEnabled(loop.node(), false));
            assertTrue(conditional.getMessage().contains("is a conditional node"), conditional.getMessage());
            assertThrows(IllegalArgumentException.class, () -> exec.update(body));
            body.close(); // closes the view only
            assertTrue(body.isClosed());
            assertFalse(g.isClosed());
            assertEquals(graphs, sim.gpu.liveGraphs(), "closing the view destroyed nothing");
            assertThrows(IllegalStateException.class, () -> body.addKernel(plus(a, 1)));
            exec.launch(stream); // the body still runs
            stream.synchronize();
        }
        Graph other = g.addIf(h).body();
        other.addMemset(a.bytes(), (byte) 1);
        g.close();
        assertTrue(other.isClosed(), "a body closes with its graph");
        assertThrows(IllegalStateException.class, () -> other.addMemset(a.bytes(), (byte) 2));
        a.close();
    }

    @Test
    void anEmptyBodyIsRefusedBeforeTheDriverSeesTheGraph() {
        try (DeviceBuffer a = ctx.allocate(4 * N); Graph g = ctx.createGraph()) {
            ConditionalNode loop = g.addWhile(g.createConditionalHandle(1));
            sim.faults.countCalls();
            IllegalStateException e = assertThrows(IllegalStateException.class, g::instantiate);
            assertTrue(e.getMessage().startsWith("the WHILE body of CONDITIONAL node 0 of Graph#"), e.getMessage());
            assertTrue(e.getMessage().contains("has no nodes"), e.getMessage());
            assertThrows(IllegalStateException.class, g::copy);
            assertEquals(0, sim.faults.totalCalls(), "refused before any driver call");
            loop.body().addMemset(a.bytes(), (byte) 0);
            g.instantiate().close(); // with a node, it instantiates
        }
    }

    @Test
    void anUpdateToAGraphWithAnEmptyBodyIsRefusedBeforeTheDriverSeesIt() {
        try (DeviceBuffer a = ctx.allocate(4 * N); Graph ready = ctx.createGraph(); Graph g = ctx.createGraph()) {
            ready.addIf(ready.createConditionalHandle(1)).body().addMemset(a.bytes(), (byte) 0);
            g.addIf(g.createConditionalHandle(1));
            try (GraphExec exec = ready.instantiate()) {
                sim.faults.countCalls();
                assertThrows(IllegalStateException.class, () -> exec.update(g));
                assertEquals(0, sim.faults.totalCalls(), "refused before any driver call");
            }
        }
    }

    @Test
    void aGraphWithConditionalNodesIsNotCopiedAndTheDriverIsNotAsked() {
        try (DeviceBuffer a = ctx.allocate(4 * N); DeviceBuffer flag = ctx.allocate(4); Graph g = ctx.createGraph()) {
            ConditionalHandle h = g.createConditionalHandle(0);
            ConditionalNode branch = g.addIf(h, g.addKernel(decideFrom(flag, h)));
            branch.body().addKernel(plus(a, 5));
            sim.faults.countCalls();
            IllegalStateException e = assertThrows(IllegalStateException.class, g::copy);
            assertTrue(e.getMessage().contains("conditional nodes"), e.getMessage());
            assertTrue(e.getMessage().contains("cannot clone"), e.getMessage());
            assertEquals(0, sim.faults.calls("cuGraphClone"), "refused before the driver (CUDA_ERROR_NOT_SUPPORTED on the H200)");
        }
    }

    @Test
    void anUnusedHandleIsRefusedBeforeTheDriverSeesTheGraph() {
        try (DeviceBuffer a = ctx.allocate(4 * N); Graph g = ctx.createGraph()) {
            ConditionalHandle h = g.createConditionalHandle(3);
            assertEquals(3, h.defaultValue());
            assertTrue(h.isAssignedEachLaunch());
            assertEquals(new KernelArg.I64(h.value()), h.asKernelArg());
            sim.faults.countCalls();
            IllegalStateException e = assertThrows(IllegalStateException.class, g::instantiate);
            assertTrue(e.getMessage().contains("no conditional node uses ConditionalHandle 0x"), e.getMessage());
            assertEquals(0, sim.faults.totalCalls(), "refused before any driver call");
            g.addIf(h).body().addMemset(a.bytes(), (byte) 0);
            g.instantiate().close();
        }
    }

    @Test
    void aHandleOfAnotherGraphIsRefusedBeforeAnyDriverCall() {
        try (Graph g = ctx.createGraph(); Graph other = ctx.createGraph()) {
            ConditionalHandle foreign = other.createConditionalHandle(1);
            sim.faults.countCalls();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> g.addWhile(foreign));
            assertTrue(e.getMessage().contains("create the handle with createConditionalHandle on this graph"),
                    e.getMessage());
            assertThrows(NullPointerException.class, () -> g.addIf(null));
            assertEquals(0, sim.faults.totalCalls());
        }
    }

    @Test
    void aDriverOlderThanConditionalNodesIsRefusedBeforeAnyCall() {
        Simulated old = new Simulated(new FakeDriverApi().version(12020));
        CudaContext c = old.context();
        try (Graph g = c.createGraph()) {
            old.faults.countCalls();
            DriverTooOldException e = assertThrows(DriverTooOldException.class, () -> g.createConditionalHandle(1));
            assertEquals("cuGraphConditionalHandleCreate", e.function());
            assertEquals(12030, e.requiredVersion());
            assertEquals(0, old.faults.totalCalls());
        }
        c.close();
    }

    @Test
    void elseBodiesAndSwitchNodesNeedCuda128() {
        Simulated old = new Simulated(new FakeDriverApi().version(12040));
        CudaContext c = old.context();
        try (DeviceBuffer a = c.allocate(4); Graph g = c.createGraph()) {
            ConditionalHandle h = g.createConditionalHandle(1);
            old.faults.countCalls();
            DriverTooOldException ifElse = assertThrows(DriverTooOldException.class, () -> g.addIfElse(h));
            assertEquals(12080, ifElse.requiredVersion());
            assertTrue(ifElse.getMessage().contains("an IF node with an ELSE body, and a SWITCH node, came with CUDA 12.8"),
                    ifElse.getMessage());
            assertEquals(12080, assertThrows(DriverTooOldException.class, () -> g.addSwitch(h, 2)).requiredVersion());
            assertEquals(0, old.faults.totalCalls());
            g.addIf(h).body().addMemset(a.bytes(), (byte) 0); // IF with one body came with 12.3
            g.instantiate().close();
        }
        assertEquals(List.of(), old.gpu.violations());
        c.close();
    }

    private static int[] filled(int value) {
        int[] out = new int[N];
        Arrays.fill(out, value);
        return out;
    }
}
