package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.Background;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.function.IntBinaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/**
 * Graphs built node by node on the simulated driver: results in dependency order (the simulated
 * driver runs independent nodes last-added first, so a lost dependency changes the result),
 * copies, the DOT dump, enabling and disabling nodes and setting a kernel node of an executable,
 * what a built graph holds, and misuse refused before any driver call.
 */
class GraphBuildingTest {

    private static final int N = 8;

    private final Simulated sim = new Simulated(new FakeDriverApi().deviceCount(2));
    private final CudaContext ctx = sim.context();
    private final Stream stream = ctx.createStream();
    private final Kernel add;
    private final Kernel mul;

    GraphBuildingTest() {
        // add(p, n, v): p[i] += v; mul(p, n, v): p[i] *= v. Their order matters.
        sim.gpu.kernelBody("add", l -> apply(l, (x, v) -> x + v));
        sim.gpu.kernelBody("mul", l -> apply(l, (x, v) -> x * v));
        ctx.modules().load("a", ModuleImage.ptx("add.ptx", Ptx.module("add", "u64", "u32", "u32")));
        ctx.modules().load("m", ModuleImage.ptx("mul.ptx", Ptx.module("mul", "u64", "u32", "u32")));
        add = ctx.modules().kernel("a", "add");
        mul = ctx.modules().kernel("m", "mul");
    }

    private static void apply(dev.gatun.cuda.testing.FakeKernel.Launch l, IntBinaryOperator op) {
        var p = l.memory(l.pointer(0), 4L * l.i32(1));
        for (int i = 0; i < l.i32(1); i++) {
            p.setAtIndex(ValueLayout.JAVA_INT, i, op.applyAsInt(p.getAtIndex(ValueLayout.JAVA_INT, i), l.i32(2)));
        }
    }

    @AfterEach
    void nothingLeftOrMisused() {
        add.close();
        mul.close();
        stream.close();
        ctx.close(); // refuses while a graph, executable or buffer is still open
        assertEquals(List.of(), sim.gpu.violations());
        assertEquals(0, sim.gpu.liveGraphs());
        assertEquals(0, sim.gpu.liveGraphExecs());
    }

    private KernelLaunch launch(Kernel k, DeviceBuffer v, int value) {
        return k.prepare(LaunchConfig.of(1, N), KernelArg.pointer(v), KernelArg.i32(N), KernelArg.i32(value));
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

    private static int[] filled(int value) {
        int[] out = new int[N];
        Arrays.fill(out, value);
        return out;
    }

    /** fill(a, 2) -> add(a, 3) -> mul(a, 10) -> copy(b <- a); an independent memset of c. */
    private record Chain(Graph graph, GraphNode fill, GraphNode add, GraphNode mul, GraphNode copy) {
    }

    private Chain chain(DeviceBuffer a, DeviceBuffer b) {
        Graph g = ctx.createGraph();
        GraphNode fill = g.addFill(a.asInts(), 2);
        GraphNode plus = g.addKernel(launch(add, a, 3), fill);
        GraphNode times = g.addKernel(launch(mul, a, 10), plus);
        GraphNode copy = g.addCopy(b.asInts(), a.asInts(), times);
        return new Chain(g, fill, plus, times, copy);
    }

    @Test
    void aBuiltGraphRunsItsNodesInDependencyOrderOnEveryLaunch() {
        try (DeviceBuffer a = ctx.allocate(4 * N); DeviceBuffer b = ctx.allocate(4 * N);
                DeviceBuffer c = ctx.allocate(4 * N)) {
            poison(a);
            poison(b);
            poison(c);
            Chain chain = chain(a, b);
            try (Graph g = chain.graph()) {
                GraphNode memset = g.addMemset(c.bytes(), (byte) 1); // no dependency
                assertEquals(List.of(0, 1, 2, 3, 4), List.of(chain.fill().index(), chain.add().index(),
                        chain.mul().index(), chain.copy().index(), memset.index()));
                assertEquals(GraphNode.Kind.COPY, chain.copy().kind());
                try (GraphExec exec = g.instantiate()) {
                    for (int round = 0; round < 2; round++) {
                        exec.launch(stream);
                        assertArrayEquals(filled((2 + 3) * 10), read(a), "round " + round);
                        assertArrayEquals(filled((2 + 3) * 10), read(b), "the copy ran after the kernels");
                        assertArrayEquals(filled(0x01010101), read(c));
                        poison(b);
                    }
                }
            }
        }
    }

    /**
     * Two threads add chains of nodes to one graph at once (sampled, not forced: the building
     * lock is what keeps the node list and the indices whole): no node is lost, every index is
     * given once, and every chain keeps its dependencies.
     */
    @Test
    void twoThreadsBuildingOneGraphLoseNoNodeIndexOrDependency() throws Exception {
        int perThread = 200;
        try (DeviceBuffer a = ctx.allocate(4 * N); DeviceBuffer b = ctx.allocate(4 * N); Graph g = ctx.createGraph()) {
            a.asInts().copyFrom(new int[N]);
            b.asInts().copyFrom(new int[N]);
            List<GraphNode> added = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
            java.util.concurrent.CountDownLatch start = new java.util.concurrent.CountDownLatch(1);
            List<Background<Void>> builders = List.of(a, b).stream().map(v -> Background.run("builder", () -> {
                KernelLaunch launch = launch(add, v, 1); // one prepared launch per thread: not thread-safe
                start.await();
                GraphNode previous = null;
                for (int i = 0; i < perThread; i++) {
                    previous = previous == null ? g.addKernel(launch) : g.addKernel(launch, previous);
                    added.add(previous);
                }
            })).toList();
            start.countDown();
            builders.forEach(Background::join);
            assertEquals(2 * perThread, g.nodes().size());
            assertEquals(java.util.stream.IntStream.range(0, 2 * perThread).boxed().toList(),
                    added.stream().map(GraphNode::index).sorted().toList(), "each index given once");
            try (GraphExec exec = g.instantiate()) {
                exec.launch(stream);
            }
            assertArrayEquals(filled(perThread), read(a));
            assertArrayEquals(filled(perThread), read(b));
        }
    }

    @Test
    void aCopyOfAGraphIsIndependentOfIt() {
        try (DeviceBuffer a = ctx.allocate(4 * N); DeviceBuffer b = ctx.allocate(4 * N)) {
            Chain chain = chain(a, b);
            Graph original = chain.graph();
            Graph copy = original.copy();
            original.addKernel(launch(add, a, 1000), chain.copy()); // not in the copy
            original.close(); // the copy holds what it held
            try (copy; GraphExec exec = copy.instantiate()) {
                exec.launch(stream);
                assertArrayEquals(filled(50), read(a), "the copy lacks the node added to the original afterwards");
                GraphNode late = copy.addKernel(launch(add, a, 1));
                assertThrows(IllegalArgumentException.class, () -> exec.setEnabled(chain.fill(), false),
                        "a node of the original does not name the copy's");
                assertThrows(IllegalArgumentException.class, () -> exec.setEnabled(late, false),
                        "added after the executable was instantiated");
            }
        }
    }

    @Test
    void aDisabledNodeIsSkippedUntilEnabledAgainInThatExecutableOnly() {
        try (DeviceBuffer a = ctx.allocate(4 * N); DeviceBuffer b = ctx.allocate(4 * N)) {
            Chain chain = chain(a, b);
            try (Graph g = chain.graph(); GraphExec exec = g.instantiate(); GraphExec other = g.instantiate()) {
                exec.setEnabled(chain.add(), false);
                exec.launch(stream);
                assertArrayEquals(filled(2 * 10), read(b), "add skipped; mul still ran after the fill");
                other.launch(stream);
                assertArrayEquals(filled(50), read(b), "another executable of the graph is unchanged");
                exec.setEnabled(chain.add(), true);
                exec.launch(stream);
                assertArrayEquals(filled(50), read(b));
                exec.setEnabled(chain.copy(), false);
                poison(b);
                exec.launch(stream);
                assertArrayEquals(filled(50), read(a));
                assertArrayEquals(filled(0xDEAD), read(b), "the disabled copy left b alone");
            }
        }
    }

    @Test
    void settingAKernelNodeChangesLaterLaunchesOfThatExecutableAndHoldsItsBuffers() {
        int allocations = sim.gpu.liveDeviceAllocations();
        try (DeviceBuffer a = ctx.allocate(4 * N); DeviceBuffer b = ctx.allocate(4 * N)) {
            Chain chain = chain(a, b);
            try (Graph g = chain.graph(); GraphExec exec = g.instantiate()) {
                exec.setKernelNode(chain.add(), launch(add, a, 7));
                exec.launch(stream);
                assertArrayEquals(filled((2 + 7) * 10), read(b));
                try (GraphExec fresh = g.instantiate()) {
                    fresh.launch(stream);
                    assertArrayEquals(filled(50), read(b), "the graph itself is unchanged");
                }
                DeviceBuffer scratch = ctx.allocate(4 * N);
                exec.setKernelNode(chain.mul(), launch(mul, scratch, 2)); // mul now scales scratch, not a
                scratch.close();
                ctx.reap();
                assertEquals(allocations + 3, sim.gpu.liveDeviceAllocations(), "the executable holds scratch");
                exec.launch(stream);
                assertArrayEquals(filled(2 + 7), read(b));
                assertThrows(IllegalArgumentException.class, () -> exec.setKernelNode(chain.copy(), launch(add, a, 1)),
                        "a copy node takes no launch");
            }
            ctx.reap();
            assertEquals(allocations + 2, sim.gpu.liveDeviceAllocations(), "scratch freed with the executable");
        }
    }

    @Test
    void aBuiltGraphAndItsExecutablesHoldItsBuffersAndModules() {
        int allocations = sim.gpu.liveDeviceAllocations();
        DeviceBuffer a = ctx.allocate(4 * N);
        DeviceBuffer b = ctx.allocate(4 * N);
        Chain chain = chain(a, b);
        GraphExec exec = chain.graph().instantiate();
        a.close();
        b.close();
        ctx.modules().unload("a");
        ctx.modules().unload("m");
        add.close();
        mul.close();
        chain.graph().close();
        ctx.reap();
        assertEquals(allocations + 2, sim.gpu.liveDeviceAllocations(), "the executable's nodes still name them");
        assertEquals(2, sim.gpu.liveModules());
        exec.launch(stream);
        exec.close();
        ctx.reap();
        assertEquals(allocations, sim.gpu.liveDeviceAllocations());
        assertEquals(0, sim.gpu.liveModules());
    }

    @Test
    void theDotDumpNamesEveryNodeAndDependency(@TempDir Path dir) throws IOException {
        try (DeviceBuffer a = ctx.allocate(4 * N); DeviceBuffer b = ctx.allocate(4 * N);
                Graph g = chain(a, b).graph()) {
            Path file = dir.resolve("chain.dot");
            g.writeDot(file);
            String dot = Files.readString(file);
            assertTrue(dot.startsWith("digraph"), dot);
            for (String part : List.of("MEMSET", "add", "mul", "MEMCPY", "node0 -> node1", "node1 -> node2",
                    "node2 -> node3")) {
                assertTrue(dot.contains(part), "no " + part + " in\n" + dot);
            }
        }
    }

    @Test
    void misuseIsRefusedBeforeAnyDriverCall(@TempDir Path dir) {
        try (DeviceBuffer a = ctx.allocate(4 * N); DeviceBuffer b = ctx.allocate(4 * N);
                DeviceBuffer small = ctx.allocate(4); Graph g = ctx.createGraph(); Graph other = ctx.createGraph()) {
            GraphNode mine = g.addMemset(a.bytes(), (byte) 0);
            GraphNode foreign = other.addMemset(b.bytes(), (byte) 0);
            KernelLaunch cooperative = add.prepare(LaunchConfig.of(1, N).withCooperative(true), KernelArg.pointer(a),
                    KernelArg.i32(N), KernelArg.i32(1));
            DeviceBuffer closed = ctx.allocate(4 * N);
            KernelLaunch onClosed = launch(add, closed, 1);
            DeviceView closedView = closed.bytes();
            closed.close();
            try (GraphExec exec = g.instantiate()) {
                GraphNode late = g.addMemset(b.bytes(), (byte) 0);
                sim.faults.countCalls();
                refused(IllegalArgumentException.class, "not a node of", () -> g.addMemset(b.bytes(), (byte) 1, foreign));
                refused(IllegalArgumentException.class, "named twice", () -> g.addMemset(b.bytes(), (byte) 1, mine, mine));
                refused(IllegalArgumentException.class, "copy sizes differ", () -> g.addCopy(a.bytes(), small.bytes()));
                refused(IllegalArgumentException.class, "is empty", () -> g.addMemset(a.bytes().slice(0, 0), (byte) 1));
                refused(IllegalArgumentException.class, "4-byte aligned", () -> g.addFill(a.bytes().slice(1, 4), 1));
                refused(IllegalArgumentException.class, "cooperative", () -> g.addKernel(cooperative));
                refused(IllegalStateException.class, "is closed", () -> g.addKernel(onClosed));
                refused(IllegalStateException.class, "is closed", () -> g.addMemset(closedView, (byte) 1));
                refused(IllegalArgumentException.class, "not a node of the graph this executable",
                        () -> exec.setEnabled(foreign, false));
                refused(IllegalArgumentException.class, "instantiate the graph again", () -> exec.setEnabled(late, false));
                refused(IllegalArgumentException.class, "does not exist", () -> g.writeDot(dir.resolve("no/such.dot")));
                assertEquals(0, sim.faults.totalCalls(), "every refusal came before the driver");
            }
            other.close();
            assertThrows(IllegalStateException.class, () -> other.addMemset(b.bytes(), (byte) 1));
            assertThrows(IllegalStateException.class, other::copy);
        }
    }

    private static void refused(Class<? extends RuntimeException> type, String says, Executable call) {
        RuntimeException e = assertThrows(type, call);
        assertTrue(e.getMessage().contains(says), e.getMessage());
    }
}
