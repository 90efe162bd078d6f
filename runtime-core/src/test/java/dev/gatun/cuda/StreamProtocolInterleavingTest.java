package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.internal.context.SwitchPoint;
import dev.gatun.cuda.internal.memory.DeviceMemory;
import dev.gatun.cuda.testing.Background;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.FakeKernel;
import dev.gatun.cuda.testing.Interposer;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The per-stream rules of the stream protocol (runtime-core/README.md, "One stream protocol")
 * when two threads race on one stream, forced with an {@link Interposer}: one thread is held
 * inside a driver call (a launch, an allocation, a free, a capture's end, a fill), the other
 * thread's step runs (a capture's begin, a record, a close), then the first goes on. Each test
 * asserts the invariant, not one order: a fix may serialize the two steps either way (the held
 * thread's step before the other's, or the other waiting), and both are correct as long as what
 * is captured is held, nothing is freed under queued work, and nothing of Gatun's lands in a
 * user's graph (concurrency review 2026-12-03, sections 2, 3, 5 and 6).
 */
class StreamProtocolInterleavingTest {

    private static final int N = 4;

    private final Interposer interposer = Interposer.over(new FakeDriverApi());
    private final Simulated sim = new Simulated(interposer);
    private final CudaContext ctx = sim.context();
    private final Stream s = ctx.createStream();

    StreamProtocolInterleavingTest() {
        sim.gpu.kernelBody("add", FakeKernel.ADD); // add(p, n, v): p[i] += v
        ctx.modules().load("m", ModuleImage.ptx("add.ptx", Ptx.module("add", "u64", "u32", "u32")));
    }

    /** Starts {@code step} on thread T2 while T1 is held at {@code held}, then lets T1 go; returns T2's result. */
    private static <T> T whileHeld(Interposer.Stop held, Background<?> t1, Supplier<Background<T>> step) {
        held.awaitArrival();
        Background<T> t2 = step.get();
        t2.awaitFinishedOrWaiting(); // finished: it ran inside T1's call; waiting: it is ordered after it
        held.release();
        t1.join();
        return t2.join();
    }

    @Test
    @Tag("protocol-fix")
    void aLaunchThatLandsInACaptureBegunMeanwhileIsHeldByTheGraph() {
        DeviceBuffer v = ctx.allocate(4L * N);
        v.asInts().copyFrom(new int[N]);
        try (Kernel add = ctx.modules().kernel("m", "add")) {
            KernelLaunch launch = add.prepare(LaunchConfig.of(1, N), KernelArg.pointer(v), KernelArg.i32(N),
                    KernelArg.i32(1));
            Interposer.Stop inLaunch = interposer.stopBefore("cuLaunchKernel").onThread("T1");
            Background<Void> t1 = Background.run("T1", () -> launch.launch(s));
            StreamCapture capture = whileHeld(inLaunch, t1,
                    () -> Background.call("T2", () -> s.beginCapture(CaptureMode.RELAXED)));
            try (Graph graph = capture.end()) {
                v.close();
                ctx.reap();
                assertEquals(List.of(), sim.gpu.danglingGraphUses(), "the launch went into the capture, which holds "
                        + "nothing it uses: the buffer was freed while the captured graph names it");
                try (GraphExec exec = graph.instantiate()) {
                    exec.launch(s);
                }
            }
        }
        ctx.synchronize();
        s.close();
        assertEquals(List.of(), sim.gpu.violations(), "a replay of the graph touched freed memory");
    }

    @Test
    @Tag("protocol-fix")
    void anAllocationThatLandsInACaptureBegunMeanwhileIsEitherTheGraphsOrMadeBeforeIt() {
        Interposer.Stop inAllocation = interposer.stopBefore("cuMemAllocAsync").onThread("T1");
        Background<DeviceBuffer> t1 = Background.call("T1", () -> s.allocate(256));
        StreamCapture capture = whileHeld(inAllocation, t1,
                () -> Background.call("T2", () -> s.beginCapture(CaptureMode.RELAXED)));
        DeviceBuffer b = t1.join();
        try (Graph graph = capture.end()) {
            boolean node = sim.gpu.isGraphAllocation(b.address());
            assertEquals(node, b.isGraphAllocation(), "Gatun treats " + b + " as "
                    + (b.isGraphAllocation() ? "a graph allocation" : "an ordinary buffer") + ", but the driver made "
                    + (node ? "an allocation node of the captured graph" : "an ordinary allocation before the capture"));
            if (b.isGraphAllocation()) {
                assertTrue(graph.allocations().contains(b), "a graph allocation the graph does not list");
            }
            b.close();
        }
        ctx.synchronize();
        s.close();
        ctx.synchronize();
        assertEquals(List.of(), sim.gpu.violations(), "a double free or a use of unbacked graph memory");
    }

    @Test
    @Tag("protocol-fix")
    void retirementsFreeIsNeverRecordedIntoAUserCaptureOfTheCopyStream() {
        Stream other = ctx.createStream();
        DeviceBuffer b = s.allocate(256);
        other.memset(b.bytes(), (byte) 0); // used on two streams: its close frees it after both fences
        Interposer.Stop inFree = interposer.stopBefore("cuMemFreeAsync").onThread("T1");
        Background<Void> t1 = Background.run("T1", b::close);
        StreamCapture capture = whileHeld(inFree, t1,
                () -> Background.call("T2", () -> ctx.copyStream().beginCapture(CaptureMode.RELAXED)));
        capture.end().close();
        other.close();
        s.close();
        ctx.synchronize();
        assertEquals(0, sim.gpu.liveDeviceAllocations(), "the driver still holds the buffer's memory after its close, "
                + "the capture's end, the graph's close and ctx.synchronize(): its free went into the user's capture "
                + "(Gatun counts " + ctx.diagnostics().counters().liveBytes() + " bytes live)");
        assertEquals(0, ctx.diagnostics().counters().liveBytes(), "Gatun's count of live bytes disagrees with the driver");
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    @Tag("protocol-fix")
    void anEventRecordedWhileACaptureEndsIsRefusedACompletionIfItWentIntoTheGraph() throws Exception {
        StreamCapture capture = s.beginCapture(CaptureMode.RELAXED);
        try (Event e = ctx.createEvent()) {
            Interposer.Stop record = interposer.stopAfter("cuEventRecord").onThread("T1")
                    .where(Interposer.argument(0, e.handle()));
            Graph graph = recordDuringEnd(capture, record, () -> Background.run("T1", () -> e.record(s)));
            graph.close();
            checkCompletion(sim.gpu.lastRecordCaptured(e.handle()), e::onComplete, "Event.onComplete");
        }
        s.close();
    }

    @Test
    @Tag("protocol-fix")
    void aFenceRecordedWhileACaptureEndsIsRefusedACompletionIfItWentIntoTheGraph() throws Exception {
        StreamCapture capture = s.beginCapture(CaptureMode.RELAXED);
        Interposer.Stop record = interposer.stopAfter("cuEventRecord").onThread("T1")
                .where(Interposer.argument(1, s.state().handle()));
        Fence[] fence = new Fence[1];
        Graph graph = recordDuringEnd(capture, record, () -> Background.run("T1", () -> fence[0] = s.recordFence()));
        graph.close();
        MemorySegment event = (MemorySegment) record.arguments()[0];
        checkCompletion(sim.gpu.lastRecordCaptured(event), fence[0]::onComplete, "Fence.onComplete");
        fence[0].close();
        s.close();
    }

    /**
     * Ends {@code capture} on T2, held just before the driver's end; meanwhile T1 records (held
     * just after its record, at {@code record}, until the end is over, if it gets that far first).
     */
    private Graph recordDuringEnd(StreamCapture capture, Interposer.Stop record, Supplier<Background<Void>> recorder) {
        Interposer.Stop inEnd = interposer.stopBefore("cuStreamEndCapture").onThread("T2");
        Background<Graph> t2 = Background.call("T2", capture::end);
        inEnd.awaitArrival(); // the end has begun: Gatun's view of the capture is being torn down
        Background<Void> t1 = recorder.get();
        boolean recordedFirst = record.awaitArrivalOr(t1); // or T1 waits for the end
        inEnd.release();
        Graph graph;
        if (recordedFirst) {
            graph = t2.join(); // the end is over before T1 looks at what its record went into
            record.release();
        } else {
            record.awaitArrival(); // T1 recorded once the end let it (it may still hold the stream)
            record.release();
            graph = t2.join();
        }
        t1.join();
        return graph;
    }

    /** A record that went into the graph must be refused a completion; one that did not must complete. */
    private void checkCompletion(boolean captured, Supplier<CompletableFuture<Void>> onComplete, String what)
            throws InterruptedException, ExecutionException {
        if (captured) {
            assertThrows(CaptureActiveException.class, onComplete::get, "the record went into the captured graph, yet "
                    + what + " accepted it: its future can never complete");
            return;
        }
        CompletableFuture<Void> done = onComplete.get();
        ctx.synchronize();
        try {
            done.get(Interposer.GUARD.toMillis(), TimeUnit.MILLISECONDS); // a deadlock guard
        } catch (TimeoutException e) {
            throw new AssertionError("the record ran outside the capture, yet " + what + "'s future did not complete "
                    + "after ctx.synchronize()", e);
        }
    }

    @Test
    @Tag("protocol-fix")
    void aSubmissionRacingItsStreamsCloseIsRefusedOrCoveredByTheFinalFence() {
        Stream x = ctx.createStream();
        DeviceBuffer b = ctx.allocate(4L * N);
        HeldStreams.hold(sim, x); // the GPU is busy on x: what is queued there runs when the test says
        Interposer.Stop inFill = interposer.stopBefore("cuMemsetD32Async").onThread("T1");
        Background<Void> t1 = Background.run("T1", () -> x.fill(b.asInts(), 7));
        inFill.awaitArrival(); // the fill has passed every check and is about to be queued
        Background<Void> t2 = Background.run("T2", x::close);
        t2.awaitFinishedOrWaiting();
        inFill.release();
        Throwable refused = t1.joinFailure();
        t2.join();
        if (refused != null) {
            assertInstanceOf(IllegalStateException.class, refused, "a fill racing the close is refused as a use of a "
                    + "closed stream, or queued before the final fence");
        }
        b.close();
        sim.gpu.advance(x.state().handle(), 1); // the GPU finishes what was queued first on x, not what came after
        ctx.reap();
        assertEquals(List.of(), sim.gpu.violations(), "the fill was queued after the closed stream's final fence, "
                + "so the buffer (or the stream) was freed while the fill was still queued");
        HeldStreams.release(sim, x);
        ctx.synchronize();
        assertEquals(0, sim.gpu.liveDeviceAllocations(), "the buffer is freed once the stream drained");
        s.close();
    }

    @Test
    void aLaunchRacingAConditionalNodeIntoTheCaptureIsCapturedBeforeOrAfterItNeverBetween() {
        DeviceBuffer v = ctx.allocate(4L * N);
        v.asInts().copyFrom(new int[N]);
        try (Kernel add = ctx.modules().kernel("m", "add")) {
            KernelLaunch launch = add.prepare(LaunchConfig.of(1, N), KernelArg.pointer(v), KernelArg.i32(N),
                    KernelArg.i32(1));
            StreamCapture capture = s.beginCapture(CaptureMode.RELAXED);
            ConditionalHandle h = capture.createConditionalHandle(1);
            // T1 has read the capture's dependencies and is about to add the node after them.
            Interposer.Stop inAdd = interposer.stopBefore("cuGraphAddNode_v2").onThread("T1");
            Background<ConditionalNode> t1 = Background.call("T1", () -> capture.addIf(h));
            whileHeld(inAdd, t1, () -> Background.run("T2", () -> launch.launch(s)));
            t1.join().body().addKernel(launch);
            try (Graph graph = capture.end(); GraphExec exec = graph.instantiate()) {
                exec.launch(s);
            }
        }
        ctx.synchronize();
        s.close();
        int[] back = new int[N];
        v.asInts().copyTo(back);
        int[] twice = new int[N];
        Arrays.fill(twice, 2);
        assertArrayEquals(twice, back, "the launch and the IF body each ran once");
        v.close();
        assertEquals(List.of(), sim.gpu.violations(), "the launch was captured between the read of the capture's "
                + "dependencies and the node added after them, which were stale then");
    }

    /**
     * The capture gate's common path takes no lock (a section counts itself in with one atomic
     * step): a global-mode capture begun while a synchronous allocation is held inside cuMemAlloc
     * waits for that section to leave before it reaches the driver; the buffer's free at close,
     * while the capture is open, is deferred to a reap after it, never made under it.
     */
    @Test
    @Tag("protocol-fix")
    void aGlobalCaptureBegunWhileASynchronousAllocationIsInsideWaitsForIt() {
        Interposer.Stop inAlloc = interposer.stopBefore("cuMemAlloc_v2").onThread("T1");
        Interposer.Stop inBegin = interposer.stopBefore("cuStreamBeginCapture_v2").onThread("T2");
        CountDownLatch freed = new CountDownLatch(1);
        Background<DeviceBuffer> t1 = Background.call("T1", () -> ctx.allocate(256));
        inAlloc.awaitArrival();
        Background<Void> t2 = Background.run("T2", () -> {
            StreamCapture capture = s.beginCapture(CaptureMode.GLOBAL);
            assertTrue(freed.await(Interposer.GUARD.toMillis(), TimeUnit.MILLISECONDS), "the test thread never closed the buffer");
            capture.end().close(); // a global capture ends on the thread that began it
        });
        assertFalse(inBegin.awaitArrivalOr(t2), "the capture reached cuStreamBeginCapture while an allocation was "
                + "inside cuMemAlloc");
        assertFalse(t2.finished(), "the capture's begin gave up instead of waiting");
        inAlloc.release();
        DeviceBuffer b = t1.join();
        inBegin.awaitArrival(); // the section left: the capture goes on
        inBegin.release();
        int live = sim.gpu.liveDeviceAllocations();
        b.close(); // cuMemFree may synchronize: not while the capture is open
        assertEquals(live, sim.gpu.liveDeviceAllocations(), "cuMemFree ran while the global capture was open");
        freed.countDown();
        t2.join();
        ctx.reap();
        assertEquals(live - 1, sim.gpu.liveDeviceAllocations(), "the deferred free ran at the reap after the capture");
        assertEquals(List.of(), sim.gpu.violations(), "a synchronizing call ran under the global capture");
    }

    /**
     * A stream-ordered allocation reads its address from its stream's own out-parameter block (no
     * thread-local), written by cuMemAllocAsync under the stream's lock: held just after the
     * driver wrote it, T1 still holds the lock, so T2's allocation on the same stream waits and
     * cannot overwrite the block before T1 reads it; T3's on another stream, with a block of its
     * own, goes on meanwhile. Every buffer gets the address the driver returned for it.
     */
    @Test
    void anAllocationHeldAfterCuMemAllocAsyncKeepsItsAddressWhileOthersAllocate() {
        Interposer.Stop afterAlloc = interposer.stopAfter("cuMemAllocAsync").onThread("T1");
        Background<DeviceBuffer> t1 = Background.call("T1", () -> s.allocate(256));
        afterAlloc.awaitArrival();
        long t1Address = ((MemorySegment) afterAlloc.arguments()[0]).reinterpret(Long.BYTES).get(ValueLayout.JAVA_LONG, 0);
        try (Stream other = ctx.createStream()) {
            Background<DeviceBuffer> t3 = Background.call("T3", () -> other.allocate(256));
            DeviceBuffer onOther = t3.join(); // another stream's block: not held up by T1
            Background<DeviceBuffer> t2 = Background.call("T2", () -> s.allocate(256));
            t2.awaitFinishedOrWaiting();
            assertFalse(t2.finished(), "T2 allocated on the stream T1 holds, inside T1's allocation");
            afterAlloc.release();
            DeviceBuffer first = t1.join();
            DeviceBuffer second = t2.join();
            assertEquals(t1Address, first.address(), "T1's address is the one the driver wrote for it");
            assertEquals(3, Set.of(first.address(), second.address(), onOther.address()).size(),
                    "two allocations got one address");
            first.close();
            second.close();
            onOther.close();
        }
        s.synchronize();
        assertEquals(List.of(), sim.gpu.violations());
    }

    /**
     * A created pool's counts live on the ledger of the stream it allocates on: a snapshot taken
     * while a free at close is held inside cuMemFreeAsync (the stream's lock held, its ledger not
     * yet counted) waits for that lock, then counts the free once, never an allocation without
     * its bytes or a free before its count.
     */
    @Test
    void aPoolSnapshotDuringAFreeAtCloseWaitsForTheStreamsLedger() {
        try (MemoryPool pool = ctx.createMemoryPool(MemoryPoolOptions.defaults())) {
            DeviceBuffer b = pool.allocate(s, 256);
            assertEquals(new MemoryPoolCounters(1, 0, 256, 0, 0), pool.counters());
            Interposer.Stop inFree = interposer.stopBefore("cuMemFreeAsync").onThread("T1");
            Background<Void> t1 = Background.run("T1", b::close);
            inFree.awaitArrival();
            Background<MemoryPoolCounters> t2 = Background.call("T2", pool::counters);
            t2.awaitFinishedOrWaiting();
            assertFalse(t2.finished(), "the snapshot read the ledger while the free at close held the stream");
            inFree.release();
            t1.join();
            assertEquals(new MemoryPoolCounters(1, 1, 0, 0, 0), t2.join(), "the snapshot after the free at close");
            s.synchronize();
        }
        assertEquals(List.of(), sim.gpu.violations());
    }

    /**
     * A hold counts before it reads closed (NativeResource.hold's fast path, candidate 6), so a
     * hold refused on a closed handle leaves its count for a moment. Here a capture's admission
     * of a buffer (T1's memset on a capturing stream) counts just after another thread's close
     * freed the buffer at close and kept its object for the next allocation on its stream; that
     * allocation, made while T1 sits between its count and its read of closed, reuses the object.
     * It must not take the passing count for a hold: the allocation succeeds (T1's use, of a
     * closed buffer, is refused as before). Before the fix, the reuse threw "cannot be reused:
     * it is open, held or tracked" after the driver had allocated, and the memory was lost.
     */
    @Test
    void anAllocationReusingAClosedBuffersObjectWhileARefusedHoldCountsSucceeds() {
        Stream capturing = ctx.createStream();
        DeviceBuffer b = s.allocate(256); // stream-ordered on s: freed at its close there, its object kept for s
        DeviceMemory memory = b.resource();
        StreamCapture capture = capturing.beginCapture(CaptureMode.RELAXED);
        DeviceBuffer next;
        Background<Void> t1;
        try {
            Interposer.Stop beforeCount = interposer.stopAt(SwitchPoint.HOLD_COUNT).onThread("T1");
            t1 = Background.run("T1", () -> capturing.memset(b.bytes(), (byte) 0));
            beforeCount.awaitArrival(); // the capture admits b: its hold is about to count
            b.close(); // nothing holds it: freed at close on s, its object kept for s's next allocation
            assertTrue(memory.isClosed());
            assertFalse(memory.held());
            Interposer.Stop afterCount = interposer.stopAt(SwitchPoint.CLOSED_READ).onThread("T1");
            beforeCount.release();
            afterCount.awaitArrival();
            assertTrue(memory.held(), "T1's hold counted and has not read closed yet");
            next = s.allocate(256);
            assertSame(memory, next.resource(), "the allocation did not reuse the closed buffer's object");
            afterCount.release();
        } finally {
            Interposer.releaseSwitchPoints();
        }
        IllegalStateException refused = assertThrows(IllegalStateException.class, t1::join);
        assertTrue(refused.getMessage().contains("is closed"), refused.getMessage());
        capture.end().close();
        next.close();
        capturing.close();
        ctx.reap();
        assertFalse(memory.held(), "a hold was left on the reused object");
        assertEquals(List.of(), sim.gpu.violations());
    }
}
