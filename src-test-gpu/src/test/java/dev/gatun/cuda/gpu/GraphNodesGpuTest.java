package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Event;
import dev.gatun.cuda.Graph;
import dev.gatun.cuda.GraphExec;
import dev.gatun.cuda.GraphNode;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.KernelLaunch;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.PinnedBuffer;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.junit.RequiresGpu;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;

/**
 * Graph nodes on a real GPU: a graph with a child graph node, replayed on random inputs with
 * poisoned outputs against the CPU (with {@link GraphBuildingGpuTest}'s axpy kernel and replay), before and after a node is removed; and the listing of a
 * graph of every kind Gatun adds (cuGraphGetNodes, cuGraphNodeGetType): the count and each kind.
 */
@RequiresGpu
class GraphNodesGpuTest {

    @Test
    void aChildGraphRunsInItsParentAsTheCpuComputesAndARemovedNodeNoLonger(TestReporter reporter) {
        CudaContext ctx = Gpu.context();
        int n = 4099;
        long seed = Gpu.seed();
        Random r = Gpu.random(seed);
        int fill = r.nextInt();
        int a = r.nextInt() | 1;
        int b = r.nextInt() | 1;
        try (Kernel axpy = Gpu.kernel(GraphBuildingGpuTest.SOURCE, "axpy"); Stream s = ctx.createStream();
                DeviceBuffer x = ctx.allocate(4L * n); DeviceBuffer y = ctx.allocate(4L * n);
                DeviceBuffer z = ctx.allocate(4L * n); Graph parent = ctx.createGraph()) {
            GraphNode start = parent.addFill(y.asInts(), fill);
            GraphNode child;
            try (Graph c = ctx.createGraph()) {
                GraphNode first = c.addKernel(step(axpy, y, x, a, n));
                c.addKernel(step(axpy, y, x, b, n), first);
                child = parent.addChild(c, start);
            } // closed: the parent runs its own copy
            GraphNode last = parent.addKernel(step(axpy, y, x, a, n), child);
            parent.addCopy(z.asInts(), y.asInts(), last);
            int[] hostX = new int[n];
            int[] out = new int[n];
            try (GraphExec exec = parent.instantiate()) {
                for (int replay = 0; replay < 5; replay++) {
                    GraphBuildingGpuTest.run(exec, s, r, hostX, y, z, x, out);
                    assertArrayEquals(cpu(fill, hostX, a, b, a), out, "replay " + replay + "; seed=" + seed);
                }
            }
            // Removing the last kernel leaves the copy without an edge to the child; the kernel is
            // added again, and the copy, found in the listing, removed and added after it.
            parent.remove(last);
            GraphNode again = parent.addKernel(step(axpy, y, x, a, n), child);
            GraphNode copy = parent.nodes().stream().filter(nd -> nd.kind() == GraphNode.Kind.COPY).findFirst()
                    .orElseThrow();
            parent.remove(copy);
            parent.addCopy(z.asInts(), y.asInts(), again);
            try (GraphExec exec = parent.instantiate()) {
                GraphBuildingGpuTest.run(exec, s, r, hostX, y, z, x, out);
                assertArrayEquals(cpu(fill, hostX, a, b, a), out, "after removing and re-adding; seed=" + seed);
            }
            try (Graph without = ctx.createGraph()) {
                GraphNode f = without.addFill(y.asInts(), fill);
                GraphNode k = without.addKernel(step(axpy, y, x, a, n), f);
                without.addCopy(z.asInts(), y.asInts(), f);
                without.remove(k);
                try (GraphExec exec = without.instantiate()) {
                    GraphBuildingGpuTest.run(exec, s, r, hostX, y, z, x, out);
                    int[] onlyFill = new int[n];
                    Arrays.fill(onlyFill, fill);
                    assertArrayEquals(onlyFill, out, "the removed kernel did not run; seed=" + seed);
                }
            }
            reporter.publishEntry("child graph and removal", "5 replays + 2 after removals = CPU (seed " + seed + ")");
        }
    }

    @Test
    void aGraphListsEachOfItsNodesOnceWithItsKind(TestReporter reporter) {
        CudaContext ctx = Gpu.context();
        int n = 256;
        try (Kernel axpy = Gpu.kernel(GraphBuildingGpuTest.SOURCE, "axpy"); DeviceBuffer x = ctx.allocate(4L * n);
                DeviceBuffer y = ctx.allocate(4L * n); PinnedBuffer host = ctx.allocatePinned(4L * n);
                Event done = ctx.createEvent(); Graph child = ctx.createGraph(); Graph g = ctx.createGraph()) {
            child.addFill(x.asInts(), 1);
            GraphNode up = g.addUpload(x.asInts(), host, 0);
            GraphNode set = g.addFill(y.asInts(), 0);
            GraphNode k = g.addKernel(step(axpy, y, x, 3, n), up, set);
            GraphNode copy = g.addCopy(x.asInts(), y.asInts(), k);
            GraphNode down = g.addDownload(host, 0, y.asInts(), k);
            GraphNode h = g.addHost(() -> { }, down, copy);
            GraphNode sub = g.addChild(child, h);
            GraphNode record = g.addEventRecord(done, sub);
            List<GraphNode> nodes = g.nodes();
            assertEquals(8, nodes.size());
            assertEquals(List.of(up, set, k, copy, down, h, sub, record).stream().sorted(
                    (p, q) -> Integer.compare(p.index(), q.index())).toList(),
                    nodes.stream().sorted((p, q) -> Integer.compare(p.index(), q.index())).toList(),
                    "each node listed once, as the object its add method returned");
            Map<GraphNode.Kind, Integer> counts = new EnumMap<>(GraphNode.Kind.class);
            for (GraphNode node : nodes) {
                counts.merge(node.kind(), 1, Integer::sum);
            }
            assertEquals(Map.of(GraphNode.Kind.COPY, 3, GraphNode.Kind.MEMSET, 1, GraphNode.Kind.KERNEL, 1,
                    GraphNode.Kind.HOST, 1, GraphNode.Kind.CHILD_GRAPH, 1, GraphNode.Kind.EVENT_RECORD, 1), counts);
            g.remove(copy);
            assertEquals(7, g.nodes().size());
            // A graph the driver made lists nodes Gatun did not add, with the kinds the driver reports.
            try (Graph clone = g.copy()) {
                List<GraphNode.Kind> kinds = clone.nodes().stream().map(GraphNode::kind).sorted().toList();
                assertEquals(List.of(GraphNode.Kind.KERNEL, GraphNode.Kind.MEMSET, GraphNode.Kind.COPY,
                        GraphNode.Kind.COPY, GraphNode.Kind.EVENT_RECORD, GraphNode.Kind.HOST,
                        GraphNode.Kind.CHILD_GRAPH), kinds);
                assertEquals(-1, clone.nodes().getFirst().index());
            }
            reporter.publishEntry("node listing", "8 nodes by kind " + counts + ", 7 after a removal, the copy's 7 by kind");
        }
    }

    private static KernelLaunch step(Kernel axpy, DeviceBuffer y, DeviceBuffer x, int a, int n) {
        return axpy.prepare(LaunchConfig.covering(n, 128), KernelArg.pointer(y), KernelArg.pointer(x),
                KernelArg.i32(a), KernelArg.i32(n));
    }

    /** y = fill, then y = y * m + x for each multiplier in turn. */
    private static int[] cpu(int fill, int[] x, int... multipliers) {
        int[] y = new int[x.length];
        Arrays.fill(y, fill);
        for (int m : multipliers) {
            for (int i = 0; i < x.length; i++) {
                y[i] = y[i] * m + x[i];
            }
        }
        return y;
    }

}
