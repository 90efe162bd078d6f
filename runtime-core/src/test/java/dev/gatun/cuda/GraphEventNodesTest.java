package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

/**
 * Event record and event wait nodes of graphs built node by node, on the simulated driver: a
 * record node records its event at each launch once its dependencies are done, a wait node
 * holds the nodes after it until the event's last record queued before the launch has run,
 * across streams and across graphs; an executable's event node can be pointed at another event
 * but not disabled; a graph and its executables keep the events their nodes name alive; misuse
 * is refused before any driver call.
 */
class GraphEventNodesTest {

    private static final int N = 8;

    private final Simulated sim = new Simulated(new FakeDriverApi().deviceCount(2));
    private final CudaContext ctx = sim.context();
    private final Stream first = ctx.createStream();
    private final Stream second = ctx.createStream();
    private final Kernel add;

    GraphEventNodesTest() {
        // add(p, n, v): p[i] += v
        sim.gpu.kernelBody("add", FakeKernel.ADD);
        ctx.modules().load("a", ModuleImage.ptx("add.ptx", Ptx.module("add", "u64", "u32", "u32")));
        add = ctx.modules().kernel("a", "add");
    }

    @AfterEach
    void nothingLeftOrMisused() {
        add.close();
        first.close();
        second.close();
        ctx.close(); // refuses while a graph, executable, event or buffer is still open
        assertEquals(List.of(), sim.gpu.violations());
        assertEquals(0, sim.gpu.liveGraphs());
        assertEquals(0, sim.gpu.liveGraphExecs());
        assertEquals(0, sim.gpu.liveEvents());
    }

    private KernelLaunch launch(DeviceBuffer v, int value) {
        return add.prepare(LaunchConfig.of(1, N), KernelArg.pointer(v), KernelArg.i32(N), KernelArg.i32(value));
    }

    private static int[] read(DeviceBuffer b) {
        int[] out = new int[N];
        b.asInts().copyTo(out);
        return out;
    }

    private static int[] filled(int value) {
        int[] out = new int[N];
        Arrays.fill(out, value);
        return out;
    }

    @Test
    void aRecordNodeRecordsItsEventOnceItsDependenciesAreDoneAtEveryLaunch() {
        try (DeviceBuffer a = ctx.allocate(4 * N); Event done = ctx.createEvent(); Graph g = ctx.createGraph()) {
            GraphNode fill = g.addFill(a.asInts(), 1);
            GraphNode step = g.addKernel(launch(a, 2), fill);
            GraphNode record = g.addEventRecord(done, step);
            assertEquals(GraphNode.Kind.EVENT_RECORD, record.kind());
            assertEquals(2, record.index());
            try (GraphExec exec = g.instantiate()) {
                for (int round = 0; round < 2; round++) {
                    sim.gpu.hold(first.handle());
                    exec.launch(first);
                    assertFalse(done.query(), "round " + round + ": the graph has not run");
                    sim.gpu.release(first.handle());
                    assertTrue(done.query(), "round " + round + ": recorded by the launch");
                    assertArrayEquals(filled(3), read(a));
                }
            }
        }
    }

    @Test
    void aWaitNodeInAnotherGraphOrdersItsNodesAfterTheRecordNodeOfTheFirst() {
        try (DeviceBuffer x = ctx.allocate(4 * N); DeviceBuffer y = ctx.allocate(4 * N); Event handoff = ctx.createEvent();
                Graph producer = ctx.createGraph(); Graph consumer = ctx.createGraph()) {
            x.asInts().copyFrom(filled(-1));
            y.asInts().copyFrom(filled(-2));
            GraphNode write = producer.addFill(x.asInts(), 40);
            producer.addEventRecord(handoff, producer.addKernel(launch(x, 2), write));
            GraphNode wait = consumer.addEventWait(handoff);
            assertEquals(GraphNode.Kind.EVENT_WAIT, wait.kind());
            consumer.addCopy(y.asInts(), x.asInts(), wait);
            try (GraphExec p = producer.instantiate(); GraphExec c = consumer.instantiate()) {
                sim.gpu.hold(first.handle()); // the producer's replay waits until released
                p.launch(first);
                c.launch(second); // not held: only the wait node keeps its copy from reading x now
                assertEquals(2, sim.gpu.queuedOperations(second.handle()), "the copy waits behind the wait node");
                sim.gpu.release(first.handle());
                assertArrayEquals(filled(42), read(y), "the copy read the producer's result");
                assertTrue(handoff.query());
            }
        }
    }

    @Test
    void aWaitNodeWaitsForTheRecordQueuedBeforeItsLaunchOnAnyStream() {
        try (DeviceBuffer x = ctx.allocate(4 * N); DeviceBuffer y = ctx.allocate(4 * N); Event e = ctx.createEvent();
                Graph g = ctx.createGraph()) {
            x.asInts().copyFrom(filled(-1));
            g.addCopy(y.asInts(), x.asInts(), g.addEventWait(e));
            try (GraphExec exec = g.instantiate()) {
                exec.launch(second); // never recorded: complete, nothing to wait for
                assertArrayEquals(filled(-1), read(y));
                sim.gpu.hold(first.handle());
                first.fill(x.asInts(), 9);
                e.record(first);
                exec.launch(second);
                assertEquals(2, sim.gpu.queuedOperations(second.handle()));
                sim.gpu.release(first.handle());
                assertArrayEquals(filled(9), read(y));
            }
        }
    }

    @Test
    void anExecutablesEventNodeCanTakeAnotherEventButCannotBeDisabled() {
        try (Event e = ctx.createEvent(); Event f = ctx.createEvent(); Graph g = ctx.createGraph()) {
            GraphNode record = g.addEventRecord(e);
            GraphNode wait = g.addEventWait(e, record);
            try (GraphExec exec = g.instantiate()) {
                exec.setEvent(record, f);
                exec.setEvent(wait, f);
                sim.gpu.hold(first.handle());
                exec.launch(first);
                assertTrue(e.query(), "the executable no longer records e");
                assertFalse(f.query(), "it records f");
                sim.gpu.release(first.handle());
                assertTrue(f.query());
                sim.faults.countCalls();
                refused(IllegalArgumentException.class, "only kernel, memset and copy nodes", () -> exec.setEnabled(record,
                        false));
                refused(IllegalArgumentException.class, "setEvent", () -> exec.setEnabled(wait, false));
                assertEquals(0, sim.faults.totalCalls());
                sim.faults.clear();
            }
        }
    }

    @Test
    void theGraphItsCopyAndItsExecutablesKeepTheirEventsAlive() {
        try (DeviceBuffer a = ctx.allocate(4 * N)) {
            Event e = ctx.createEvent();
            Event f = ctx.createEvent();
            Graph g = ctx.createGraph();
            GraphNode record = g.addEventRecord(e, g.addFill(a.asInts(), 5));
            Graph copy = g.copy();
            GraphExec exec = g.instantiate();
            exec.setEvent(record, f);
            e.close();
            f.close();
            g.close();
            ctx.reap();
            assertTrue(sim.gpu.eventAlive(e.handle()), "the executable and the copy hold e");
            assertTrue(sim.gpu.eventAlive(f.handle()), "the executable holds the event it was set to");
            exec.launch(first); // records f, a closed event the executable still holds
            exec.close();
            first.synchronize();
            ctx.reap();
            assertFalse(sim.gpu.eventAlive(f.handle()), "destroyed with the last executable that named it");
            assertTrue(sim.gpu.eventAlive(e.handle()), "the copy still holds e");
            try (copy; GraphExec again = copy.instantiate()) {
                again.launch(first);
                assertArrayEquals(filled(5), read(a));
            }
            ctx.reap();
            assertFalse(sim.gpu.eventAlive(e.handle()));
        }
    }

    @Test
    void theDotFileNamesTheEventNodes(@TempDir Path dir) throws IOException {
        try (Event e = ctx.createEvent(); Graph g = ctx.createGraph()) {
            g.addEventWait(e, g.addEventRecord(e));
            Path file = dir.resolve("events.dot");
            g.writeDot(file);
            String dot = Files.readString(file);
            assertTrue(dot.contains("EVENT_RECORD") && dot.contains("WAIT_EVENT") && dot.contains("node0 -> node1"), dot);
        }
    }

    @Test
    void misuseIsRefusedBeforeAnyDriverCall() {
        CudaContext other = sim.cuda.device(1).context();
        try (DeviceBuffer a = ctx.allocate(4 * N); Event e = ctx.createEvent(); Event foreignEvent = other.createEvent();
                Graph g = ctx.createGraph(); Graph h = ctx.createGraph()) {
            GraphNode fill = g.addFill(a.asInts(), 0);
            GraphNode record = g.addEventRecord(e, fill);
            GraphNode foreignNode = h.addEventRecord(e);
            Event closed = ctx.createEvent();
            closed.close();
            try (GraphExec exec = g.instantiate()) {
                GraphNode late = g.addEventWait(e, record);
                sim.faults.countCalls();
                refused(IllegalArgumentException.class, "device 1", () -> g.addEventRecord(foreignEvent));
                refused(IllegalArgumentException.class, "device 1", () -> g.addEventWait(foreignEvent));
                refused(IllegalStateException.class, "is closed", () -> g.addEventRecord(closed));
                refused(IllegalStateException.class, "is closed", () -> g.addEventWait(closed));
                refused(IllegalArgumentException.class, "not a node of", () -> g.addEventWait(e, foreignNode));
                refused(IllegalArgumentException.class, "named twice", () -> g.addEventRecord(e, fill, fill));
                assertThrows(NullPointerException.class, () -> g.addEventRecord(null));
                refused(IllegalArgumentException.class, "not an event node", () -> exec.setEvent(fill, e));
                refused(IllegalArgumentException.class, "instantiate the graph again", () -> exec.setEvent(late, e));
                refused(IllegalArgumentException.class, "not a node of the graph", () -> exec.setEvent(foreignNode, e));
                refused(IllegalArgumentException.class, "device 1", () -> exec.setEvent(record, foreignEvent));
                refused(IllegalStateException.class, "is closed", () -> exec.setEvent(record, closed));
                assertEquals(0, sim.faults.totalCalls(), () -> "driver calls: " + sim.faults.counts());
                sim.faults.clear();
            }
        } finally {
            other.close();
        }
    }

    private static void refused(Class<? extends RuntimeException> type, String says, Executable call) {
        RuntimeException e = assertThrows(type, call);
        assertTrue(e.getMessage().contains(says), e.getMessage());
    }
}
