package dev.gatun.cuda;

import static dev.gatun.cuda.AddKernelFixture.filled;
import static dev.gatun.cuda.AddKernelFixture.read;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.Simulated;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Child graph nodes, node removal and node listing on the simulated driver: a child node runs a
 * copy of its child taken when it was added, and its graph holds what the child held; removing a
 * node drops its work and its edges, and in a graph built by hand lets go of what no other node
 * names; the listing gives every node once, with its kind; misuse is refused before any driver call.
 */
class GraphChildAndRemovalTest {

    private static final int N = AddKernelFixture.N;

    private final AddKernelFixture fixture = new AddKernelFixture(new FakeDriverApi());
    private final Simulated sim = fixture.sim;
    private final CudaContext ctx = fixture.ctx;
    private final Stream stream = fixture.stream;

    @AfterEach
    void nothingLeftOrMisused() {
        fixture.close();
        assertEquals(0, sim.gpu.liveDeviceAllocations());
    }

    @Test
    void aChildNodeRunsTheChildAsItWasWhenAddedBetweenItsNeighbours() {
        try (DeviceBuffer a = ctx.allocate(4 * N); Graph parent = ctx.createGraph()) {
            GraphNode child;
            try (Graph c = ctx.createGraph()) {
                GraphNode times = c.addKernel(fixture.launch(a, 3));
                c.addKernel(fixture.launch(a, 4), times);
                GraphNode fill = parent.addFill(a.asInts(), 100);
                child = parent.addChild(c, fill);
                c.addKernel(fixture.launch(a, 1000)); // after the copy: not in the parent
            }
            parent.addKernel(fixture.launch(a, 10000), child);
            assertEquals(GraphNode.Kind.CHILD_GRAPH, child.kind());
            try (GraphExec exec = parent.instantiate()) {
                a.asInts().copyFrom(filled(-1)); // poison
                exec.launch(stream);
                stream.synchronize();
            }
            assertArrayEquals(filled(100 + 3 + 4 + 10000), read(a));
        }
    }

    @Test
    void theParentHoldsWhatTheChildHeldAfterTheChildAndTheBufferAreClosed() {
        DeviceBuffer a = ctx.allocate(4 * N);
        Graph parent = ctx.createGraph();
        try (Graph c = ctx.createGraph()) {
            c.addFill(a.asInts(), 7);
            parent.addChild(c);
        }
        a.close();
        ctx.reap();
        assertEquals(1, sim.gpu.liveDeviceAllocations(), "held by the parent's copy of the child");
        try (GraphExec exec = parent.instantiate()) {
            exec.launch(stream);
            stream.synchronize();
        }
        parent.close();
        ctx.reap();
        assertEquals(0, sim.gpu.liveDeviceAllocations());
    }

    @Test
    void removingANodeDropsItsWorkAndItsEdges() {
        try (DeviceBuffer a = ctx.allocate(4 * N); Graph g = ctx.createGraph()) {
            GraphNode fill = g.addFill(a.asInts(), 1);
            GraphNode twice = g.addKernel(fixture.launch(a, 20), fill);
            g.addKernel(fixture.launch(a, 300), twice);
            assertEquals(3, g.nodes().size());
            g.remove(twice);
            assertTrue(twice.isRemoved());
            assertEquals(List.of(GraphNode.Kind.MEMSET, GraphNode.Kind.KERNEL),
                    g.nodes().stream().map(GraphNode::kind).toList());
            assertSame(fill, g.nodes().getFirst(), "a node added by hand is listed as itself");
            try (GraphExec exec = g.instantiate()) {
                a.asInts().copyFrom(filled(-1));
                exec.launch(stream);
                stream.synchronize();
            }
            // The last kernel lost its edge to the fill with the removed node: it may run
            // before or after the fill; the simulated driver runs the last added first.
            assertArrayEquals(filled(1), read(a), "no edge left: the kernel ran first, then the fill");
        }
    }

    @Test
    void removingTheOnlyNodeThatNamesABufferLetsTheGraphGoOfIt() {
        DeviceBuffer named = ctx.allocate(4 * N);
        DeviceBuffer kept = ctx.allocate(4 * N);
        try (Graph g = ctx.createGraph()) {
            GraphNode one = g.addFill(named.asInts(), 1);
            g.addCopy(kept.asInts(), kept.asInts().slice(0, N)); // names kept only
            GraphNode both = g.addCopy(named.asInts(), kept.asInts());
            named.close();
            kept.close();
            g.remove(one);
            ctx.reap();
            assertEquals(2, sim.gpu.liveDeviceAllocations(), "the copy still names both");
            g.remove(both);
            ctx.reap();
            assertEquals(1, sim.gpu.liveDeviceAllocations(), "named freed; kept still named by the first copy");
        }
        ctx.reap();
        assertEquals(0, sim.gpu.liveDeviceAllocations());
    }

    @Test
    void anExecutableMadeBeforeARemovalKeepsItsCopyButCannotAddressTheNode() {
        try (DeviceBuffer a = ctx.allocate(4 * N); Graph g = ctx.createGraph()) {
            GraphNode step = g.addKernel(fixture.launch(a, 5));
            try (GraphExec exec = g.instantiate()) {
                a.close(); // the executable holds it
                g.remove(step);
                ctx.reap();
                assertEquals(1, sim.gpu.liveDeviceAllocations(), "held by the executable");
                exec.launch(stream);
                stream.synchronize();
                assertThrows(IllegalArgumentException.class, () -> exec.setEnabled(step, false));
            }
        }
        ctx.reap();
        assertEquals(0, sim.gpu.liveDeviceAllocations());
    }

    @Test
    void aCapturedGraphKeepsWhatItHoldsWhenANodeIsRemoved() {
        DeviceBuffer a = ctx.allocate(4 * N);
        StreamCapture capture = stream.beginCapture(CaptureMode.GLOBAL);
        fixture.launch(a, 1).launch(stream);
        try (Graph g = capture.end()) {
            a.close();
            GraphNode kernel = g.nodes().getFirst();
            assertEquals(GraphNode.Kind.KERNEL, kernel.kind());
            g.remove(kernel);
            ctx.reap();
            assertEquals(1, sim.gpu.liveDeviceAllocations(), "the driver does not say what a captured node names");
            assertEquals(List.of(), g.nodes());
        }
    }

    @Test
    void aFailedRemovalCountsTheNodeRemovedAndKeepsWhatItNamed() {
        try (DeviceBuffer a = ctx.allocate(4 * N); Graph g = ctx.createGraph()) {
            GraphNode fill = g.addFill(a.asInts(), 1);
            sim.faults.replaceOnce("cuGraphDestroyNode", CudaDriver.CUDA_ERROR_INVALID_VALUE());
            assertThrows(CudaException.class, () -> g.remove(fill));
            assertTrue(fill.isRemoved(), "never named to the driver again");
            assertThrows(IllegalArgumentException.class, () -> g.addFill(a.asInts(), 2, fill));
            assertThrows(IllegalStateException.class, () -> g.remove(fill));
        }
    }

    @Test
    void misuseIsRefusedBeforeAnyDriverCall() {
        try (DeviceBuffer a = ctx.allocate(4 * N); Graph g = ctx.createGraph(); Graph other = ctx.createGraph()) {
            GraphNode foreign = other.addFill(a.asInts(), 0);
            ConditionalHandle h = g.createConditionalHandle(1);
            ConditionalNode cond = g.addIf(h);
            cond.body().addFill(a.asInts(), 0);
            Graph withMemory;
            StreamCapture capture = stream.beginCapture(CaptureMode.GLOBAL);
            stream.allocate(64);
            withMemory = capture.end();
            sim.faults.countCalls();
            assertThrows(IllegalArgumentException.class, () -> g.remove(foreign));
            assertThrows(IllegalArgumentException.class, () -> g.remove(cond.node()));
            assertThrows(IllegalArgumentException.class, () -> other.addChild(other));
            assertThrows(IllegalArgumentException.class, () -> other.addChild(g), "conditional nodes");
            assertThrows(IllegalArgumentException.class, () -> other.addChild(cond.body()));
            assertThrows(IllegalArgumentException.class, () -> other.addChild(withMemory));
            assertThrows(IllegalStateException.class, () -> cond.body().addChild(other));
            assertEquals(0, sim.faults.totalCalls(), "no driver call");
            withMemory.allocations().forEach(DeviceBuffer::close);
            withMemory.close();
        }
    }
}
