package dev.gatun.cuda.graph;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CaptureActiveException;
import dev.gatun.cuda.CaptureInvalidatedException;
import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.GraphUpdateResult;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.ModuleImage;
import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.testing.FakeKernel;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Graph slots and the latch on the simulated driver: what a captured graph holds, and the gate. */
class CudaGraphsTest {

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();
    private final CudaGraphs graphs = CudaGraphs.create(ctx);
    private final Stream stream = ctx.createStream();

    CudaGraphsTest() {
        sim.gpu.kernelBody("add", FakeKernel.ADD);
        ctx.modules().load("m", ModuleImage.ptx("add.ptx", Ptx.module("add", "u64", "u32", "u32")));
    }

    @AfterEach
    void noViolationsAndNothingLeft() {
        graphs.close();
        stream.close();
        ctx.close(); // refuses while a graph, executable or buffer is still open
        assertEquals(List.of(), sim.gpu.violations());
        assertEquals(0, sim.gpu.liveGraphs());
        assertEquals(0, sim.gpu.liveGraphExecs());
    }

    private int[] read(DeviceBuffer b, int n) {
        int[] out = new int[n];
        b.asInts().slice(0, n).copyTo(out);
        return out;
    }

    @Test
    void aCapturedKernelRunsOnlyWhenReplayed() {
        GraphSlot slot = graphs.registerGroup("o").slot("s");
        try (Kernel add = ctx.modules().kernel("m", "add"); DeviceBuffer v = ctx.allocate(16)) {
            v.asInts().copyFrom(new int[] {1, 2, 3, 4});
            slot.beginCapture(stream, CaptureMode.GLOBAL);
            add.launch(stream, LaunchConfig.of(1, 4), KernelArg.pointer(v), KernelArg.i32(4), KernelArg.i32(10));
            slot.endCapture();
            assertArrayEquals(new int[] {1, 2, 3, 4}, read(v, 4), "captured, not run");
            slot.replay(stream);
            slot.replay(stream);
            assertArrayEquals(new int[] {21, 22, 23, 24}, read(v, 4));
            assertEquals(2, graphs.counters().replays());
            assertEquals(1, ctx.diagnostics().liveOwners(OwnerKind.GRAPH_EXEC));
            assertTrue(slot.reset());
            assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.GRAPH_EXEC));
            ctx.reap();
            assertEquals(0, sim.gpu.liveGraphExecs());
        }
    }

    @Test
    void aBufferClosedAfterCaptureLivesUntilTheGraphsLastLaunchCompletes() {
        GraphSlot slot = graphs.registerGroup("o").slot("s");
        long buffers = ctx.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER); // the latch word
        int allocations = sim.gpu.liveDeviceAllocations();
        Kernel add = ctx.modules().kernel("m", "add");
        DeviceBuffer v = ctx.allocate(16);
        slot.beginCapture(stream, CaptureMode.THREAD_LOCAL);
        add.launch(stream, LaunchConfig.of(1, 4), KernelArg.pointer(v), KernelArg.i32(4), KernelArg.i32(1));
        slot.endCapture();
        sim.gpu.hold(stream.handle());
        slot.replay(stream);
        v.close();
        add.close();
        ctx.modules().unload("m"); // the graph holds the module even after its name is gone
        ctx.reap();
        assertEquals(buffers, ctx.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER), "closed for Java");
        assertEquals(allocations + 1, sim.gpu.liveDeviceAllocations(), "held by the graph");
        assertEquals(1, sim.gpu.liveModules());
        slot.reset();
        ctx.reap();
        assertEquals(allocations + 1, sim.gpu.liveDeviceAllocations(), "the replay is still queued");
        sim.gpu.release(stream.handle());
        ctx.reap();
        ctx.reap();
        assertEquals(allocations, sim.gpu.liveDeviceAllocations());
        assertEquals(0, sim.gpu.liveModules());
        assertEquals(0, sim.gpu.liveGraphExecs());
        assertEquals(0, sim.gpu.liveGraphs());
    }

    @Test
    void aRegisteredCaptureRefusesUnregisteredBuffersBeforeQueueingAnything() {
        GraphSlot slot = graphs.registerGroup("o").slot("s");
        try (Kernel add = ctx.modules().kernel("m", "add"); DeviceBuffer ok = ctx.allocate(16);
                DeviceBuffer stray = ctx.allocate(16)) {
            slot.beginCapture(stream, CaptureMode.GLOBAL, List.of(ok));
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> add.launch(stream,
                    LaunchConfig.of(1, 4), KernelArg.pointer(stray), KernelArg.i32(4), KernelArg.i32(1)));
            assertTrue(e.getMessage().contains("is not one of the buffers"), e.getMessage());
            assertEquals(0, sim.gpu.launches());
            add.launch(stream, LaunchConfig.of(1, 4), KernelArg.pointer(ok), KernelArg.i32(4), KernelArg.i32(1));
            slot.endCapture();
            assertEquals(1, slot.segmentCount());
            slot.reset();
        }
    }

    @Test
    void aGlobalCaptureMakesSynchronizingCallsOfOtherThreadsWait() throws Exception {
        GraphSlot slot = graphs.registerGroup("o").slot("s");
        ctx.setGateTimeout(Duration.ZERO);
        slot.beginCapture(stream, CaptureMode.GLOBAL);
        CompletionException blocked = assertThrows(CompletionException.class,
                () -> CompletableFuture.supplyAsync(() -> ctx.allocate(8)).join());
        assertTrue(blocked.getCause() instanceof CaptureActiveException, blocked.toString());
        ctx.setGateTimeout(Duration.ofSeconds(30));
        CompletableFuture<DeviceBuffer> waiting = CompletableFuture.supplyAsync(() -> ctx.allocate(8));
        assertFalse(waiting.isDone(), "waits while the capture is open");
        slot.endCapture();
        waiting.get().close();
        ctx.setGateTimeout(Duration.ZERO);
        slot.beginCapture(stream, CaptureMode.THREAD_LOCAL); // other modes do not hold the gate
        CompletableFuture.supplyAsync(() -> ctx.allocate(8)).get().close();
        slot.endCapture();
    }

    @Test
    void anInvalidatedCaptureLeavesNoGraphNoGateAndNothingHeld() throws Exception {
        GraphSlot slot = graphs.registerGroup("o").slot("s");
        try (Kernel add = ctx.modules().kernel("m", "add"); DeviceBuffer v = ctx.allocate(16)) {
            slot.beginCapture(stream, CaptureMode.GLOBAL);
            add.launch(stream, LaunchConfig.of(1, 4), KernelArg.pointer(v), KernelArg.i32(4), KernelArg.i32(1));
            sim.gpu.invalidateCapture(stream.handle()); // as a forbidden call during the capture would
            CaptureInvalidatedException e = assertThrows(CaptureInvalidatedException.class, slot::endCapture);
            assertTrue(e.getMessage().contains("was invalidated before it ended"), e.toString());
            assertFalse(slot.hasExecutable());
            assertFalse(ctx.device().context().isClosed());
            CompletableFuture.supplyAsync(() -> ctx.allocate(8)).get().close(); // gate released
        }
        ctx.reap();
        assertEquals(0, sim.gpu.liveDeviceAllocations() - 1, "only the latch word remains");
        assertEquals(0, sim.gpu.liveGraphs());
    }

    @Test
    void aSameShapeRecaptureUpdatesTheExecutableInPlace() {
        GraphSlot slot = graphs.registerGroup("o").slot("s");
        try (Kernel add = ctx.modules().kernel("m", "add"); DeviceBuffer v = ctx.allocate(16)) {
            v.asInts().copyFrom(new int[4]);
            slot.beginCapture(stream, CaptureMode.GLOBAL);
            add.launch(stream, LaunchConfig.of(1, 4), KernelArg.pointer(v), KernelArg.i32(4), KernelArg.i32(1));
            slot.endCapture();
            slot.beginRecapture(0, stream, CaptureMode.GLOBAL);
            add.launch(stream, LaunchConfig.of(1, 4), KernelArg.pointer(v), KernelArg.i32(4), KernelArg.i32(100));
            slot.endCapture();
            assertEquals(1, slot.counters().updatesInPlace());
            slot.replay(stream);
            assertArrayEquals(new int[] {100, 100, 100, 100}, read(v, 4));
            slot.beginRecapture(0, stream, CaptureMode.GLOBAL);
            add.launch(stream, LaunchConfig.of(1, 4), KernelArg.pointer(v), KernelArg.i32(4), KernelArg.i32(1));
            add.launch(stream, LaunchConfig.of(1, 4), KernelArg.pointer(v), KernelArg.i32(4), KernelArg.i32(1));
            slot.endCapture();
            assertEquals(1, slot.counters().reinstantiations(), "a new topology is instantiated anew");
            assertEquals(Map.of(GraphUpdateResult.TOPOLOGY_CHANGED, 1L), slot.updateRefusals(), "and the driver's reason is kept");
            slot.replay(stream);
            assertArrayEquals(new int[] {102, 102, 102, 102}, read(v, 4));
            slot.reset();
        }
    }

    @Test
    void aKernelNodeIsUpdatedInPlaceAfterAnyNumberOfSameShapeRecaptures() {
        List<Integer> grids = new java.util.concurrent.CopyOnWriteArrayList<>();
        sim.gpu.kernelBody("add", l -> {
            grids.add(l.gridX());
            FakeKernel.ADD.run(l);
        });
        GraphSlot slot = graphs.registerGroup("o").slot("s");
        try (Kernel add = ctx.modules().kernel("m", "add"); DeviceBuffer a = ctx.allocate(16);
                DeviceBuffer b = ctx.allocate(16); DeviceBuffer c = ctx.allocate(16)) {
            slot.beginCapture(stream, CaptureMode.GLOBAL);
            add.launch(stream, LaunchConfig.of(1, 4), KernelArg.pointer(a), KernelArg.i32(4), KernelArg.i32(1));
            add.launch(stream, LaunchConfig.of(1, 4), KernelArg.pointer(b), KernelArg.i32(4), KernelArg.i32(1));
            slot.endCapture();
            int recaptures = 3;
            for (int k = 1; k <= recaptures; k++) {
                slot.beginRecapture(0, stream, CaptureMode.GLOBAL);
                // The grid changes with each capture: the node update must keep the latest one.
                add.launch(stream, LaunchConfig.of(1 + k, 4), KernelArg.pointer(a), KernelArg.i32(4), KernelArg.i32(10 * k));
                add.launch(stream, LaunchConfig.of(1 + k, 4), KernelArg.pointer(b), KernelArg.i32(4), KernelArg.i32(10 * k));
                slot.endCapture();
            }
            assertEquals(recaptures, slot.counters().updatesInPlace());
            assertEquals(2, sim.gpu.liveGraphs(), "the graph last captured and the one the executable was made from");

            slot.updateKernelArguments(0, 1,
                    add.prepare(LaunchConfig.of(1, 4), KernelArg.pointer(c), KernelArg.i32(4), KernelArg.i32(7)));
            for (DeviceBuffer d : new DeviceBuffer[] {a, b, c}) {
                d.asInts().copyFrom(new int[] {-1, -1, -1, -1});
            }
            slot.replay(stream);
            assertArrayEquals(new int[] {29, 29, 29, 29}, read(a, 4), "the first node runs the last capture");
            assertArrayEquals(new int[] {-1, -1, -1, -1}, read(b, 4), "the second node no longer writes b");
            assertArrayEquals(new int[] {6, 6, 6, 6}, read(c, 4), "it writes c with the new value");
            assertEquals(List.of(1 + recaptures, 1 + recaptures), grids, "the re-captured grid is kept");
            assertEquals(0, slot.counters().reinstantiations());
            assertEquals(Map.of(), slot.updateRefusals());

            slot.reset();
            ctx.reap();
            assertEquals(0, sim.gpu.liveGraphExecs());
            assertEquals(0, sim.gpu.liveGraphs(), "the executable's first graph goes with it");
            assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.GRAPH));
        }
    }

    @Test
    void aNodeRecapturedWithAReplacedModulesKernelIsUpdatedThroughTheExecutablesOwnNode() {
        GraphSlot slot = graphs.registerGroup("o").slot("s");
        try (DeviceBuffer a = ctx.allocate(16); DeviceBuffer c = ctx.allocate(16)) {
            try (Kernel first = ctx.modules().kernel("m", "add")) {
                slot.beginCapture(stream, CaptureMode.GLOBAL);
                first.launch(stream, LaunchConfig.of(1, 4), KernelArg.pointer(a), KernelArg.i32(4), KernelArg.i32(1));
                slot.endCapture();
            }
            ctx.modules().load("m", ModuleImage.ptx("add.ptx", Ptx.module("add", "u64", "u32", "u32")));
            try (Kernel second = ctx.modules().kernel("m", "add")) {
                slot.beginRecapture(0, stream, CaptureMode.GLOBAL);
                second.launch(stream, LaunchConfig.of(1, 4), KernelArg.pointer(a), KernelArg.i32(4), KernelArg.i32(2));
                slot.endCapture();
                assertEquals(1, slot.counters().updatesInPlace());
                // The executable's own node launched the first module's kernel; it now runs the second's.
                slot.updateKernelArguments(0, 0,
                        second.prepare(LaunchConfig.of(1, 4), KernelArg.pointer(c), KernelArg.i32(4), KernelArg.i32(7)));
            }
            a.asInts().copyFrom(new int[4]);
            c.asInts().copyFrom(new int[4]);
            slot.replay(stream);
            assertArrayEquals(new int[4], read(a, 4));
            assertArrayEquals(new int[] {7, 7, 7, 7}, read(c, 4));
            slot.reset();
        }
    }

    @Test
    void graphsAreMadeAndClosedByTheirUserAndEachOwnsItsLatchWord() {
        assertEquals(1, ctx.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER), "this test's graphs' latch word");
        CudaGraphs second = CudaGraphs.create(ctx);
        assertNotSame(graphs, second);
        assertEquals(2, ctx.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER));
        GraphSlot slot = second.registerGroup("o").slot("s");
        try (Kernel add = ctx.modules().kernel("m", "add"); DeviceBuffer v = ctx.allocate(16)) {
            slot.beginCapture(stream, CaptureMode.THREAD_LOCAL);
            add.launch(stream, LaunchConfig.of(1, 4), KernelArg.pointer(v), KernelArg.i32(4), KernelArg.i32(1));
            IllegalStateException refused = assertThrows(IllegalStateException.class, second::close);
            assertTrue(refused.getMessage().contains("cannot retire while slot 's' is capturing"), refused.getMessage());
            assertEquals(SlotPhase.CAPTURING, slot.phase());
            slot.endCapture();
        }
        second.close();
        second.close();
        assertEquals(SlotPhase.RETIRED, slot.phase(), "closing retires every group");
        assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.GRAPH_EXEC));
        assertEquals(1, ctx.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER), "its latch word is freed");
        assertThrows(IllegalStateException.class, () -> second.registerGroup("late"));
        assertEquals(SlotPhase.IDLE, graphs.registerGroup("still open").slot("s").phase(), "the first is untouched");
    }

    @Test
    void theLatchWordIsReadClearedAndNeverTouchedByAGraphReset() {
        ValidationLatch latch = graphs.latch();
        ValidationRecipient recipient = latch.register("request");
        long token = latch.begin(recipient);
        latch.activate(recipient, token);
        // A kernel would atomicOr bits into the word; write them as it would.
        graphs.latchWord().copyFrom(new int[] {LatchFlags.OUT_OF_RANGE});
        graphs.registerGroup("o").slot("s").reset();
        assertEquals(LatchFlags.OUT_OF_RANGE, latch.consume(recipient, token));
        long next = latch.begin(recipient);
        latch.activate(recipient, next);
        assertEquals(0, latch.consume(recipient, next), "the next generation starts clean");
    }
}
