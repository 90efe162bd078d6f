package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.context.GraphAllocations;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.LogCapture;
import dev.gatun.cuda.testing.FakeKernel;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.event.Level;

/**
 * Allocations inside stream captures on the simulated driver, which records {@code cuMemAllocAsync}
 * and {@code cuMemFreeAsync} on a capturing stream as allocation and free nodes, backs an
 * allocation only between a launch's allocation node and its free, and flags work on unbacked
 * memory, frees of what is not allocated, a relaunch that would allocate twice, a second
 * executable, a clone and an update of a graph with memory nodes.
 */
class GraphMemoryTest {

    private static final int N = 8;
    private static final long BYTES = 4L * N;
    private static final int INVALID_VALUE = CudaDriver.CUDA_ERROR_INVALID_VALUE();

    private final Simulated sim = new Simulated(new FakeDriverApi());
    private final CudaContext ctx = sim.context();
    private final Stream stream = ctx.createStream();
    private final Kernel add;
    private final DeviceBuffer in = ctx.allocate(BYTES);

    GraphMemoryTest() {
        // add(p, n, v): p[i] += v
        sim.gpu.kernelBody("add", FakeKernel.ADD);
        ctx.modules().load("m", ModuleImage.ptx("add.ptx", Ptx.module("add", "u64", "u32", "u32")));
        add = ctx.modules().kernel("m", "add");
    }

    @AfterEach
    void nothingLeftOrMisused() {
        add.close();
        in.close();
        stream.close();
        ctx.close();
        assertEquals(List.of(), sim.gpu.violations());
        assertEquals(0, sim.gpu.backedGraphAllocations(), "graph memory left allocated");
        assertEquals(0, sim.gpu.liveDeviceAllocations());
        assertEquals(0, ctx.diagnostics().graphAllocationCounters().liveAllocations());
        assertEquals(0, ctx.diagnostics().graphAllocationCounters().liveBytes());
    }

    private void launchAdd(Stream s, DeviceBuffer b, int v) {
        add.launch(s, LaunchConfig.of(1, N), KernelArg.pointer(b), KernelArg.i32(N), KernelArg.i32(v));
    }

    /** Captures: t = allocate; t = in + 1 (copy, kernel); out = allocate; out = t + 10; t freed in the capture. */
    private Graph captureOutFromTemporary() {
        try (StreamCapture capture = stream.beginCapture(CaptureMode.THREAD_LOCAL)) {
            DeviceBuffer t = stream.allocate(BYTES);
            stream.copy(t.bytes(), in.bytes());
            launchAdd(stream, t, 1);
            DeviceBuffer out = stream.allocate(BYTES);
            stream.copy(out.bytes(), t.bytes());
            launchAdd(stream, out, 10);
            t.close(); // a free node: every launch frees it again
            return capture.end();
        }
    }

    private static int[] read(DeviceBuffer b) {
        int[] out = new int[N];
        b.asInts().copyTo(out);
        return out;
    }

    @Test
    void eachReplayComputesIntoTheSameAddressAndAfreedTemporaryIsFreedByItsNode() {
        Random random = new Random(2);
        try (Graph graph = captureOutFromTemporary(); GraphExec exec = graph.instantiate()) {
            assertTrue(graph.hasMemoryNodes());
            assertEquals(1, graph.allocations().size(), "the temporary was freed inside the capture");
            DeviceBuffer out = graph.allocations().get(0);
            assertTrue(out.isGraphAllocation());
            long address = out.address();
            assertTrue(out.toString().contains("allocation of the graph captured on"), out.toString());
            assertEquals(new GraphAllocationCounters(2, 2, 2 * BYTES), ctx.diagnostics().graphAllocationCounters());
            IllegalStateException export = assertThrows(IllegalStateException.class, out::exportForIpc);
            assertTrue(export.getMessage().contains("is a graph allocation"), export.getMessage());
            for (int replay = 0; replay < 3; replay++) {
                int[] input = random.ints(N, -1000, 1000).toArray();
                in.asInts().copyFrom(input);
                exec.launch(stream);
                int[] expected = new int[N];
                for (int i = 0; i < N; i++) {
                    expected[i] = input[i] + 11;
                }
                assertArrayEquals(expected, read(out), "replay " + replay);
                assertEquals(address, out.address(), "the same address on every replay");
                assertEquals(1, sim.gpu.backedGraphAllocations(), "out outlives the launch; the temporary does not");
            }
            out.close(); // freed once the graph and its executable are gone
            assertEquals(1, sim.gpu.backedGraphAllocations(), "the executable still holds it");
        }
        ctx.reap();
        assertEquals(0, sim.gpu.backedGraphAllocations());
        assertEquals(new GraphAllocationCounters(2, 0, 0), ctx.diagnostics().graphAllocationCounters());
    }

    @Test
    void executablesOfAGraphWithMemoryNodesFreeThePreviousLaunchsAllocationsFirst() {
        sim.faults.countCalls();
        try (Graph graph = captureOutFromTemporary(); GraphExec exec = graph.instantiate()) {
            exec.launch(stream);
            exec.launch(stream); // the simulated driver flags a relaunch that would allocate twice
            graph.allocations().get(0).close();
        }
        ctx.reap();
        assertEquals(List.of(), sim.gpu.violations());
        assertEquals(2, sim.faults.calls("cuMemFreeAsync"), "the capture's free node, then the one free of out");
    }

    @Test
    void aClosedBufferIsFreedByAFreeNodeWithoutAFenceOrRetirement() {
        try (StreamCapture capture = stream.beginCapture(CaptureMode.GLOBAL)) {
            DeviceBuffer t = stream.allocate(BYTES);
            launchAdd(stream, t, 1);
            sim.faults.countCalls();
            t.close();
            assertEquals(1, sim.faults.calls("cuMemFreeAsync"), "the free node");
            assertEquals(1, sim.faults.totalCalls(), "no event record, no query, no synchronize");
            assertTrue(t.isClosed());
            assertThrows(IllegalStateException.class, () -> launchAdd(stream, t, 1));
            try (Graph graph = capture.end(); GraphExec exec = graph.instantiate()) {
                assertEquals(List.of(), graph.allocations());
                exec.launch(stream);
                exec.launch(stream);
                assertEquals(0, sim.gpu.backedGraphAllocations());
            }
        }
        sim.faults.clear();
        sim.faults.countCalls();
        ctx.reap();
        assertEquals(0, sim.faults.calls("cuMemFreeAsync") + sim.faults.calls("cuMemFree_v2"),
                "freed by its node: retirement frees nothing");
    }

    @Test
    void theMemoryIsUsableOnlyInItsCaptureUntilTheGraphLaunched() {
        Stream other = ctx.createStream();
        try (StreamCapture capture = stream.beginCapture(CaptureMode.THREAD_LOCAL)) {
            DeviceBuffer out = stream.allocate(BYTES);
            stream.fill(out.asInts(), 3);
            int[] host = new int[N];
            IllegalStateException sync = assertThrows(IllegalStateException.class, () -> out.asInts().copyTo(host));
            assertTrue(sync.getMessage().contains("does not exist yet"), sync.getMessage());
            assertThrows(IllegalStateException.class, () -> out.asInts().copyFrom(host));
            sim.faults.countCalls();
            IllegalStateException elsewhere = assertThrows(IllegalStateException.class, () -> other.fill(out.asInts(), 1));
            assertTrue(elsewhere.getMessage().contains("still open"), elsewhere.getMessage());
            assertEquals(0, sim.faults.totalCalls(), "refused before any driver call");
            try (Graph graph = capture.end()) {
                assertSame(out, graph.allocations().get(0));
                IllegalStateException before = assertThrows(IllegalStateException.class, () -> read(out));
                assertTrue(before.getMessage().contains("once an executable of that graph has been launched"),
                        before.getMessage());
                assertThrows(IllegalStateException.class, () -> other.fill(out.asInts(), 1));
                try (GraphExec exec = graph.instantiate()) {
                    exec.launch(stream);
                    assertArrayEquals(new int[] {3, 3, 3, 3, 3, 3, 3, 3}, read(out));
                    other.fill(out.asInts(), 4); // stream-ordered use after the launch
                    assertArrayEquals(new int[] {4, 4, 4, 4, 4, 4, 4, 4}, read(out));
                }
            }
            out.close();
        }
        other.close();
    }

    @Test
    void aSynchronousReadAfterALaunchWaitsForTheReplay() {
        try (Graph graph = captureOutFromTemporary(); GraphExec exec = graph.instantiate()) {
            in.asInts().copyFrom(new int[] {1, 2, 3, 4, 5, 6, 7, 8});
            HeldStreams.hold(sim, stream); // the GPU is still busy with the replay when the host reads
            exec.launch(stream);
            assertArrayEquals(new int[] {12, 13, 14, 15, 16, 17, 18, 19}, read(graph.allocations().get(0)));
            graph.allocations().get(0).close();
        }
    }

    @Test
    void aSecondExecutableIsRefusedUntilTheFirstIsDestroyed() {
        try (Graph graph = captureOutFromTemporary()) {
            GraphExec first = graph.instantiate();
            sim.faults.countCalls();
            IllegalStateException e = assertThrows(IllegalStateException.class, graph::instantiate);
            assertTrue(e.getMessage().contains("one executable at a time"), e.getMessage());
            assertEquals(0, sim.faults.calls("cuGraphInstantiateWithFlags"), "refused before the driver");
            HeldStreams.hold(sim, stream);
            first.launch(stream);
            first.close();
            ctx.reap();
            assertThrows(IllegalStateException.class, graph::instantiate, "closed, but its launch still runs");
            HeldStreams.release(sim, stream);
            ctx.reap();
            try (GraphExec second = graph.instantiate()) {
                second.launch(stream); // frees what the first left allocated, as AUTO_FREE_ON_LAUNCH does
                assertEquals(1, sim.gpu.backedGraphAllocations());
            }
            graph.allocations().get(0).close();
        }
    }

    @Test
    void aGraphWithMemoryNodesIsNeitherClonedNorUpdatedInPlace() {
        try (Graph graph = captureOutFromTemporary(); GraphExec exec = graph.instantiate();
                Graph plain = ctx.createGraph()) {
            plain.addFill(in.asInts(), 1);
            sim.faults.countCalls();
            IllegalStateException e = assertThrows(IllegalStateException.class, graph::copy);
            assertTrue(e.getMessage().contains("cannot clone"), e.getMessage());
            assertEquals(GraphUpdateResult.MEMORY_NODES, exec.tryUpdate(plain),
                    "an executable of a graph with memory nodes is not updated in place");
            try (GraphExec other = plain.instantiate()) {
                assertFalse(other.update(graph), "nor updated to run one");
            }
            assertEquals(0, sim.faults.calls("cuGraphClone") + sim.faults.calls("cuGraphExecUpdate_v2"));
            graph.allocations().get(0).close();
        }
    }

    @Test
    void anAbortedCaptureClosesItsAllocationsAndFreesNothing() {
        DeviceBuffer kept;
        try (StreamCapture capture = stream.beginCapture(CaptureMode.THREAD_LOCAL)) {
            kept = stream.allocate(BYTES);
            DeviceBuffer freed = stream.allocate(BYTES);
            freed.close();
            launchAdd(stream, kept, 1);
            assertEquals(2, ctx.diagnostics().graphAllocationCounters().liveAllocations());
            sim.faults.countCalls();
        } // close() aborts
        assertTrue(kept.isClosed(), "no graph came of it: its allocations are closed");
        IllegalStateException e = assertThrows(IllegalStateException.class, kept::address);
        assertTrue(e.getMessage().contains("discarded with its capture"), e.getMessage());
        ctx.reap();
        assertEquals(0, sim.faults.calls("cuMemFreeAsync") + sim.faults.calls("cuMemFree_v2"), "nothing was allocated");
        assertEquals(new GraphAllocationCounters(2, 0, 0), ctx.diagnostics().graphAllocationCounters());
        kept.close(); // idempotent
    }

    @Test
    void anInvalidatedCaptureClosesItsAllocationsAndFreesNothing() {
        StreamCapture capture = stream.beginCapture(CaptureMode.THREAD_LOCAL);
        DeviceBuffer b = stream.allocate(BYTES);
        sim.gpu.invalidateCapture(stream.state().handle());
        sim.faults.countCalls();
        assertThrows(CaptureInvalidatedException.class, capture::end);
        assertTrue(b.isClosed());
        ctx.reap();
        assertEquals(0, sim.faults.calls("cuMemFreeAsync") + sim.faults.calls("cuMemFree_v2"));
        assertEquals(0, ctx.diagnostics().graphAllocationCounters().liveAllocations());
    }

    @Test
    void aGraphNeverLaunchedFreesNothing() {
        Graph graph = captureOutFromTemporary();
        GraphExec exec = graph.instantiate();
        DeviceBuffer out = graph.allocations().get(0);
        out.close();
        exec.close();
        graph.close();
        sim.faults.countCalls();
        ctx.reap();
        assertEquals(0, sim.faults.calls("cuMemFreeAsync") + sim.faults.calls("cuMemFree_v2"),
                "its allocation node never ran: freeing the address would be an error");
        assertEquals(0, ctx.diagnostics().graphAllocationCounters().liveAllocations());
    }

    @Test
    void theGraphsBuffersOutliveItAndAreFreedWhenClosed() {
        DeviceBuffer out;
        try (Graph graph = captureOutFromTemporary(); GraphExec exec = graph.instantiate()) {
            in.asInts().copyFrom(new int[N]);
            exec.launch(stream);
            out = graph.allocations().get(0);
        }
        ctx.reap();
        assertArrayEquals(new int[] {11, 11, 11, 11, 11, 11, 11, 11}, read(out), "still the launch's memory");
        assertEquals(1, sim.gpu.backedGraphAllocations());
        sim.faults.countCalls();
        out.close();
        ctx.reap();
        assertEquals(1, sim.faults.calls("cuMemFreeAsync"), "freed once, outside the graph");
        assertEquals(0, sim.gpu.backedGraphAllocations());
    }

    @Test
    void aMemoryPoolDoesNotAllocateInsideACapture() {
        try (MemoryPool pool = ctx.createMemoryPool(MemoryPoolOptions.defaults());
                StreamCapture capture = stream.beginCapture(CaptureMode.THREAD_LOCAL)) {
            sim.faults.countCalls();
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> pool.allocate(stream, BYTES));
            assertTrue(e.getMessage().contains("stream.allocate(bytes) on the stream a Gatun capture was begun on"), e.getMessage());
            assertEquals(0, sim.faults.calls("cuMemAllocFromPoolAsync"));
            capture.abort();
        }
    }

    @Test
    void aCaptureLimitedToListedBuffersMayUseItsOwnAllocations() {
        try (StreamCapture capture = stream.beginCapture(CaptureMode.THREAD_LOCAL, List.of(in))) {
            DeviceBuffer t = stream.allocate(BYTES);
            stream.copy(t.bytes(), in.bytes());
            try (DeviceBuffer unlisted = ctx.allocate(BYTES)) {
                assertThrows(IllegalStateException.class, () -> stream.copy(unlisted.bytes(), in.bytes()));
            }
            t.close();
            capture.end().close();
        }
    }

    @Test
    void theDevicesGraphMemoryIsCountedTrimmedAndItsHighWaterReset() {
        try (Graph graph = captureOutFromTemporary(); GraphExec exec = graph.instantiate()) {
            exec.launch(stream);
            MemoryUsage launched = ctx.diagnostics().graphMemoryUsage();
            assertEquals(BYTES, launched.usedBytes(), "out stays allocated after the launch");
            assertEquals(2 * BYTES, launched.peakUsedBytes(), "the temporary too, while the launch ran");
            assertEquals(2 * BYTES, launched.reservedBytes());
            ctx.diagnostics().trimGraphMemory();
            assertEquals(BYTES, ctx.diagnostics().graphMemoryUsage().reservedBytes(), "the temporary's memory is unused");
            graph.allocations().get(0).close();
        }
        ctx.reap();
        assertEquals(0, ctx.diagnostics().graphMemoryUsage().usedBytes());
        ctx.diagnostics().trimGraphMemory();
        ctx.diagnostics().resetGraphMemoryPeaks();
        assertEquals(new MemoryUsage(0, 0, 0, 0), ctx.diagnostics().graphMemoryUsage());
    }

    // ---- faults at each driver call of the feature ----

    @Test
    void aFailedAllocationInACaptureCountsNothingAndTheCaptureGoesOn() {
        try (StreamCapture capture = stream.beginCapture(CaptureMode.THREAD_LOCAL)) {
            sim.faults.replaceOnce("cuMemAllocAsync", CudaDriver.CUDA_ERROR_OUT_OF_MEMORY());
            assertThrows(CudaException.class, () -> stream.allocate(BYTES));
            assertEquals(new GraphAllocationCounters(0, 0, 0), ctx.diagnostics().graphAllocationCounters());
            launchAdd(stream, in, 1);
            try (Graph graph = capture.end()) {
                assertFalse(graph.hasMemoryNodes());
            }
        }
    }

    @Test
    void aFreeNodeThatCannotBeRecordedLeavesTheAllocationToItsGraph() {
        LogCapture.clear();
        Graph graph;
        try (StreamCapture capture = stream.beginCapture(CaptureMode.THREAD_LOCAL)) {
            DeviceBuffer t = stream.allocate(BYTES);
            launchAdd(stream, t, 1);
            sim.faults.replaceOnce("cuMemFreeAsync", INVALID_VALUE);
            t.close(); // does not throw: a close hands over, and the graph frees it later
            LogCapture.expect(Level.WARN, GraphAllocations.class, "stays allocated by the graph");
            graph = capture.end();
        }
        assertEquals(List.of(), graph.allocations(), "closed: not listed");
        try (graph; GraphExec exec = graph.instantiate()) {
            exec.launch(stream);
            exec.launch(stream);
            assertEquals(1, sim.gpu.backedGraphAllocations());
        }
        sim.faults.countCalls();
        ctx.reap();
        assertEquals(1, sim.faults.calls("cuMemFreeAsync"), "freed after the graph and its executable");
        assertEquals(0, sim.gpu.backedGraphAllocations());
    }

    @Test
    void aFailedFreeOfALaunchedAllocationIsRetried() {
        LogCapture.clear();
        try (Graph graph = captureOutFromTemporary(); GraphExec exec = graph.instantiate()) {
            exec.launch(stream);
            graph.allocations().get(0).close();
            sim.faults.replaceOnce("cuMemFreeAsync", INVALID_VALUE); // its free, once the graph is gone
        }
        LogCapture.expect(Level.WARN, "dev.gatun.cuda.internal.context.RetirementQueue", "will retry");
        assertEquals(1, sim.gpu.backedGraphAllocations());
        ctx.reap();
        assertEquals(0, sim.gpu.backedGraphAllocations());
    }

    @Test
    void aFailedInstantiateLeavesRoomForTheOneExecutable() {
        try (Graph graph = captureOutFromTemporary()) {
            // Every try fails, the out-of-memory ladder's retries included.
            sim.faults.replaceAlways("cuGraphInstantiateWithFlags", CudaDriver.CUDA_ERROR_OUT_OF_MEMORY());
            assertThrows(CudaException.class, graph::instantiate);
            sim.faults.clear();
            try (GraphExec exec = graph.instantiate()) {
                exec.launch(stream);
            }
            graph.allocations().get(0).close();
        }
    }

    @Test
    void aFailedLaunchLeavesTheMemoryUnbackedForGatun() {
        try (Graph graph = captureOutFromTemporary(); GraphExec exec = graph.instantiate()) {
            sim.faults.replaceOnce("cuGraphLaunch", INVALID_VALUE);
            assertThrows(CudaException.class, () -> exec.launch(stream));
            assertThrows(IllegalStateException.class, () -> read(graph.allocations().get(0)),
                    "a launch the driver refused allocated nothing");
            graph.allocations().get(0).close();
        }
        sim.faults.countCalls();
        ctx.reap();
        assertEquals(0, sim.faults.calls("cuMemFreeAsync"));
    }

    @Test
    void theGraphMemoryCallsReportTheirFailures() {
        sim.faults.replaceOnce("cuDeviceGraphMemTrim", INVALID_VALUE);
        assertEquals(INVALID_VALUE, assertThrows(CudaException.class, ctx.diagnostics()::trimGraphMemory).result());
        sim.faults.replaceOnce("cuDeviceGetGraphMemAttribute", INVALID_VALUE);
        assertEquals(INVALID_VALUE, assertThrows(CudaException.class, ctx.diagnostics()::graphMemoryUsage).result());
        sim.faults.replaceOnce("cuDeviceSetGraphMemAttribute", INVALID_VALUE);
        assertEquals(INVALID_VALUE, assertThrows(CudaException.class, ctx.diagnostics()::resetGraphMemoryPeaks).result());
        assertTrue(ctx.diagnostics().poisonedBy().isEmpty());
        ctx.diagnostics().trimGraphMemory();
        assertEquals(new MemoryUsage(0, 0, 0, 0), ctx.diagnostics().graphMemoryUsage());
    }
}
