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
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Graphs and executables on the simulated driver, where a held stream is a GPU still running
 * its work: what they hold, when retirement destroys them, in-place updates of the whole graph
 * and of one kernel node, and the cost of a warmed launch.
 */
class GraphExecTest {

    private static final int N = 4;

    private final Simulated sim = new Simulated(new FakeDriverApi().deviceCount(2));
    private final CudaContext ctx = sim.context();
    private final Stream stream = ctx.createStream();
    private final List<Integer> grids = new CopyOnWriteArrayList<>();

    GraphExecTest() {
        // add(p, n, v): p[i] += v
        sim.gpu.kernelBody("add", l -> {
            grids.add(l.gridX());
            FakeKernel.ADD.run(l);
        });
        loadAdd();
    }

    private void loadAdd() {
        ctx.modules().load("m", ModuleImage.ptx("add.ptx", Ptx.module("add", "u64", "u32", "u32")));
    }

    @AfterEach
    void nothingLeftOrMisused() {
        stream.close();
        ctx.close(); // refuses while a graph, executable or buffer is still open
        assertEquals(List.of(), sim.gpu.violations());
        assertEquals(0, sim.gpu.liveGraphs());
        assertEquals(0, sim.gpu.liveGraphExecs());
    }

    private static KernelArg[] args(DeviceBuffer v, int value) {
        return new KernelArg[] {KernelArg.pointer(v), KernelArg.i32(N), KernelArg.i32(value)};
    }

    private Graph capture(Stream on, Consumer<Stream> work) {
        try (StreamCapture capture = on.beginCapture(CaptureMode.THREAD_LOCAL)) {
            work.accept(on);
            return capture.end();
        }
    }

    private static int[] read(DeviceBuffer b) {
        int[] out = new int[N];
        b.asInts().copyTo(out);
        return out;
    }

    @Test
    void aWarmedLaunchIsOneDriverCall() {
        try (Kernel add = ctx.modules().kernel("m", "add"); DeviceBuffer v = ctx.allocate(4 * N);
                Graph graph = capture(stream, s -> add.launch(s, LaunchConfig.of(1, N), args(v, 1)));
                GraphExec exec = graph.instantiate()) {
            exec.launch(stream);
            exec.launch(stream);
            sim.faults.countCalls();
            exec.launch(stream);
            assertEquals(1, sim.faults.calls("cuGraphLaunch"));
            assertEquals(1, sim.faults.totalCalls(), "no current-context check, no fence, no query, no other call");
        }
    }

    /** {@link GraphExec#launches()} counts the launches the driver accepted, on any stream, and no refused one. */
    @Test
    void launchesCountsTheLaunchesTheDriverAccepted() {
        try (Kernel add = ctx.modules().kernel("m", "add"); DeviceBuffer v = ctx.allocate(4 * N);
                Graph graph = capture(stream, s -> add.launch(s, LaunchConfig.of(1, N), args(v, 1)));
                GraphExec exec = graph.instantiate(); Stream other = ctx.createStream()) {
            assertEquals(0, exec.launches());
            exec.upload(stream);
            exec.launch(stream);
            exec.launch(other);
            assertEquals(2, exec.launches(), "an upload is no launch; a launch on any stream is");
            sim.faults.replaceOnce("cuGraphLaunch", 1); // CUDA_ERROR_INVALID_VALUE
            assertThrows(CudaException.class, () -> exec.launch(stream));
            assertEquals(2, exec.launches(), "a launch the driver refused is not counted");
            other.synchronize();
        }
    }

    @Test
    void anExecutableIsDestroyedOnlyAfterItsLastLaunchOnEveryStreamCompleted() {
        Stream other = ctx.createStream();
        try (Kernel add = ctx.modules().kernel("m", "add"); DeviceBuffer v = ctx.allocate(4 * N)) {
            Graph graph = capture(stream, s -> add.launch(s, LaunchConfig.of(1, N), args(v, 1)));
            GraphExec exec = graph.instantiate();
            graph.close(); // the executable keeps the graph it was made from
            exec.launch(stream);
            HeldStreams.hold(sim, other);
            exec.launch(other); // still running
            exec.close();
            assertThrows(IllegalStateException.class, () -> exec.launch(stream));
            assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.GRAPH_EXEC), "closed for Java at once");
            ctx.reap();
            assertEquals(1, sim.gpu.liveGraphExecs(), "the launch on the other stream is still queued");
            assertEquals(1, sim.gpu.liveGraphs(), "the graph outlives its executable");
            HeldStreams.release(sim, other);
            ctx.reap();
            assertEquals(0, sim.gpu.liveGraphExecs());
            assertEquals(0, sim.gpu.liveGraphs());
        } finally {
            other.close();
        }
    }

    @Test
    void whatACaptureUsedLivesUntilTheLastLaunchOfEveryExecutableCompletes() {
        int allocations = sim.gpu.liveDeviceAllocations();
        Kernel add = ctx.modules().kernel("m", "add");
        DeviceBuffer v = ctx.allocate(4 * N);
        Graph graph = capture(stream, s -> add.launch(s, LaunchConfig.of(1, N), args(v, 1)));
        GraphExec first = graph.instantiate();
        GraphExec second = graph.instantiate();
        graph.close();
        HeldStreams.hold(sim, stream);
        first.launch(stream);
        second.launch(stream);
        v.close();
        add.close();
        ctx.modules().unload("m"); // the graph holds the module even after its name is gone
        first.close();
        ctx.reap();
        assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER), "closed for Java");
        assertEquals(allocations + 1, sim.gpu.liveDeviceAllocations(), "held by the executables");
        assertEquals(1, sim.gpu.liveModules());
        HeldStreams.release(sim, stream);
        ctx.reap();
        assertEquals(allocations + 1, sim.gpu.liveDeviceAllocations(), "the second executable still holds it");
        second.close();
        ctx.reap();
        assertEquals(allocations, sim.gpu.liveDeviceAllocations());
        assertEquals(0, sim.gpu.liveModules());
    }

    @Test
    void aReadWaitsForALaunchOnAnotherStreamThanTheCapture() {
        Stream captureOn = ctx.createStream();
        Stream launchOn = ctx.createStream();
        try (Kernel add = ctx.modules().kernel("m", "add"); DeviceBuffer v = ctx.allocate(4 * N)) {
            v.asInts().copyFrom(new int[N]);
            try (Graph graph = capture(captureOn, s -> add.launch(s, LaunchConfig.of(1, N), args(v, 1000)));
                    GraphExec exec = graph.instantiate()) {
                captureOn.close(); // the buffer lists no stream the launches run on
                for (int round = 1; round <= 3; round++) {
                    sim.gpu.holdAll(); // the launch still runs when the read is issued
                    exec.launch(launchOn);
                    int r = round;
                    assertArrayEquals(new int[] {1000 * r, 1000 * r, 1000 * r, 1000 * r}, read(v),
                            "read " + round + " returned before the launch finished");
                }
            }
        } finally {
            launchOn.close();
        }
    }

    @Test
    void anUpdateInPlaceTakesTheNewGraphsHoldsAndADifferentTopologyIsRefused() {
        int allocations = sim.gpu.liveDeviceAllocations();
        try (Kernel add = ctx.modules().kernel("m", "add"); DeviceBuffer a = ctx.allocate(4 * N)) {
            DeviceBuffer b = ctx.allocate(4 * N);
            a.asInts().copyFrom(new int[N]);
            b.asInts().copyFrom(new int[N]);
            try (Graph first = capture(stream, s -> add.launch(s, LaunchConfig.of(1, N), args(a, 1)));
                    GraphExec exec = first.instantiate()) {
                try (Graph second = capture(stream, s -> add.launch(s, LaunchConfig.of(1, N), args(b, 5)));
                        Graph twice = capture(stream, s -> {
                            add.launch(s, LaunchConfig.of(1, N), args(a, 7));
                            add.launch(s, LaunchConfig.of(1, N), args(a, 7));
                        })) {
                    assertEquals(GraphUpdateResult.TOPOLOGY_CHANGED, exec.tryUpdate(twice), "another topology");
                    exec.launch(stream);
                    assertArrayEquals(new int[] {1, 1, 1, 1}, read(a), "unchanged by the refused update");
                    assertTrue(exec.update(second));
                }
                b.close();
                ctx.reap();
                assertEquals(allocations + 2, sim.gpu.liveDeviceAllocations(), "the executable holds b now");
                exec.launch(stream);
                assertArrayEquals(new int[] {1, 1, 1, 1}, read(a));
                assertEquals(2, sim.gpu.liveGraphs(), "the graph it runs and the one it was made from");
            }
            ctx.reap();
            assertEquals(allocations + 1, sim.gpu.liveDeviceAllocations());
        }
    }

    @Test
    void aKernelNodeIsUpdatedInPlaceAfterAnyNumberOfUpdatesInPlace() {
        try (Kernel add = ctx.modules().kernel("m", "add"); DeviceBuffer a = ctx.allocate(4 * N);
                DeviceBuffer b = ctx.allocate(4 * N); DeviceBuffer c = ctx.allocate(4 * N)) {
            Graph origin = capture(stream, s -> {
                add.launch(s, LaunchConfig.of(1, N), args(a, 1));
                add.launch(s, LaunchConfig.of(1, N), args(b, 1));
            });
            GraphExec exec = origin.instantiate();
            origin.close();
            int updates = 3;
            for (int k = 1; k <= updates; k++) {
                int grid = 1 + k;
                int value = 10 * k;
                // The grid changes with each capture: the node update must keep the latest one.
                try (Graph next = capture(stream, s -> {
                    add.launch(s, LaunchConfig.of(grid, N), args(a, value));
                    add.launch(s, LaunchConfig.of(grid, N), args(b, value));
                })) {
                    assertTrue(exec.update(next));
                }
            }
            ctx.reap();
            assertEquals(2, sim.gpu.liveGraphs(), "the graph it runs now and the one it was made from");

            exec.updateKernelNode(1, add.prepare(LaunchConfig.of(1, N), args(c, 7)));
            IllegalArgumentException none = assertThrows(IllegalArgumentException.class,
                    () -> exec.updateKernelNode(2, add.prepare(LaunchConfig.of(1, N), args(c, 7))));
            assertTrue(none.getMessage().contains("2 node(s) launching kernel 'add'; there is no occurrence 2"),
                    none.getMessage());
            for (DeviceBuffer d : new DeviceBuffer[] {a, b, c}) {
                d.asInts().copyFrom(new int[] {-1, -1, -1, -1});
            }
            grids.clear();
            exec.launch(stream);
            assertArrayEquals(new int[] {29, 29, 29, 29}, read(a), "the first node runs the last capture");
            assertArrayEquals(new int[] {-1, -1, -1, -1}, read(b), "the second node no longer writes b");
            assertArrayEquals(new int[] {6, 6, 6, 6}, read(c), "it writes c with the new value");
            assertEquals(List.of(1 + updates, 1 + updates), grids, "the re-captured grid is kept");
            exec.close();
            ctx.reap();
            assertEquals(0, sim.gpu.liveGraphs(), "the graph it was made from goes with it");
        }
    }

    @Test
    void aNodeRecapturedWithAReplacedModulesKernelIsUpdatedThroughTheExecutablesOwnNode() {
        try (DeviceBuffer a = ctx.allocate(4 * N); DeviceBuffer c = ctx.allocate(4 * N)) {
            GraphExec exec;
            try (Kernel first = ctx.modules().kernel("m", "add");
                    Graph graph = capture(stream, s -> first.launch(s, LaunchConfig.of(1, N), args(a, 1)))) {
                exec = graph.instantiate();
            }
            loadAdd();
            try (Kernel second = ctx.modules().kernel("m", "add")) {
                try (Graph graph = capture(stream, s -> second.launch(s, LaunchConfig.of(1, N), args(a, 2)))) {
                    assertTrue(exec.update(graph));
                }
                // The executable's own node launched the first module's kernel; it now runs the second's.
                exec.updateKernelNode(0, second.prepare(LaunchConfig.of(1, N), args(c, 7)));
            }
            a.asInts().copyFrom(new int[N]);
            c.asInts().copyFrom(new int[N]);
            exec.launch(stream);
            assertArrayEquals(new int[N], read(a));
            assertArrayEquals(new int[] {7, 7, 7, 7}, read(c));
            exec.close();
        }
    }

    @Test
    void ownersAreCountedAndTheContextWaitsForThemToClose() {
        try (Kernel add = ctx.modules().kernel("m", "add"); DeviceBuffer v = ctx.allocate(4 * N)) {
            Graph graph = capture(stream, s -> add.launch(s, LaunchConfig.of(1, N), args(v, 1)));
            GraphExec exec = graph.instantiate();
            assertEquals(1, ctx.diagnostics().liveOwners(OwnerKind.GRAPH));
            assertEquals(1, ctx.diagnostics().liveOwners(OwnerKind.GRAPH_EXEC));
            IllegalStateException refused = assertThrows(IllegalStateException.class, ctx::close);
            assertTrue(refused.getMessage().contains("1 GRAPH, 1 GRAPH_EXEC"), refused.getMessage());
            graph.close();
            assertThrows(IllegalStateException.class, graph::instantiate);
            assertThrows(IllegalStateException.class, () -> exec.update(graph));
            assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.GRAPH));
            exec.close();
            exec.close();
            assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.GRAPH_EXEC));
        }
    }

    @Test
    void launchesOnAClosedStreamOrAnotherDevicesStreamAreRefusedBeforeTheDriver() {
        CudaContext other = sim.cuda.device(1).context();
        Stream foreign = other.createStream();
        Stream closed = ctx.createStream();
        closed.close();
        try (Kernel add = ctx.modules().kernel("m", "add"); DeviceBuffer v = ctx.allocate(4 * N);
                Graph graph = capture(stream, s -> add.launch(s, LaunchConfig.of(1, N), args(v, 1)));
                GraphExec exec = graph.instantiate()) {
            sim.faults.countCalls();
            ContextTest.assertMismatch(() -> exec.launch(foreign));
            assertThrows(IllegalStateException.class, () -> exec.launch(closed));
            ContextTest.assertMismatch(() -> exec.upload(foreign));
            assertEquals(0, sim.faults.calls("cuGraphLaunch") + sim.faults.calls("cuGraphUpload"));
        } finally {
            foreign.close();
            other.close();
        }
    }

    @Test
    void aFailedLaunchStillOrdersSynchronousReadsAfterIt() {
        Stream launchOn = ctx.createStream();
        try (Kernel add = ctx.modules().kernel("m", "add"); DeviceBuffer v = ctx.allocate(4 * N);
                Graph graph = capture(stream, s -> add.launch(s, LaunchConfig.of(1, N), args(v, 1)));
                GraphExec exec = graph.instantiate()) {
            v.asInts().copyFrom(new int[N]);
            read(v); // nothing is left unordered
            sim.faults.overrideOnce("cuGraphLaunch", 1); // made, but reported as failed: it may run
            assertThrows(CudaException.class, () -> exec.launch(launchOn));
            sim.faults.countCalls();
            read(v);
            assertEquals(1, sim.faults.calls("cuStreamWaitEvent"), "the read is ordered after the failed launch");
        } finally {
            launchOn.close();
        }
    }
}
