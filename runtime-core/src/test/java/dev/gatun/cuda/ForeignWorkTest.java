package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.internal.context.SwitchPoint;
import dev.gatun.cuda.testing.Background;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.Interposer;
import dev.gatun.cuda.testing.LogCapture;
import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link Stream#submitForeign}: another library's work as one submission of the stream protocol.
 * The "library" here is the simulated driver called directly with the raw stream handle it is
 * given ({@code cuMemsetD32Async}, as a cuBLAS kernel would write its output), so the simulated
 * GPU runs it in that stream's order and reports any use of freed memory.
 */
class ForeignWorkTest {

    private static final int N = 4;
    private static final int CUDA_ERROR_ILLEGAL_ADDRESS = 700;

    private final Interposer interposer = Interposer.over(new FakeDriverApi());
    private final Simulated sim = new Simulated(interposer);
    private final CudaContext ctx = sim.context();

    @AfterEach
    void releaseSwitchPoints() {
        Interposer.releaseSwitchPoints();
    }

    /** A foreign library's work: writes {@code value} into every word of {@code view} on the stream it is given. */
    private ForeignWork writes(DeviceView view, int value, AtomicInteger runs) {
        return stream -> {
            runs.incrementAndGet();
            int r = interposer.api().cuMemsetD32Async(view.address(), value, view.byteSize() / 4, stream);
            if (r != 0) {
                throw new IllegalStateException("the simulated library call failed: " + r);
            }
        };
    }

    private int[] read(DeviceBuffer b) {
        int[] out = new int[(int) (b.byteSize() / 4)];
        b.asInts().copyTo(out);
        return out;
    }

    @Test
    void theWorkGetsTheStreamsHandleWithItsContextCurrentOnTheCallingThread() {
        DeviceBuffer b = ctx.allocate(4L * N);
        try (Stream s = ctx.createStream()) {
            MemorySegment expected = s.handle();
            long[] seen = new long[2];
            // A fresh thread has no current context: the submission makes it current for the work.
            Background.run("T1", () -> s.submitForeign(stream -> {
                seen[0] = stream.address();
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment current = arena.allocate(ValueLayout.ADDRESS);
                    assertEquals(0, interposer.api().cuCtxGetCurrent(current));
                    seen[1] = current.get(ValueLayout.ADDRESS, 0).address();
                }
                assertEquals(0, interposer.api().cuMemsetD32Async(b.address(), 9, N, stream));
            }, b.asInts())).join();
            assertEquals(expected.address(), seen[0], "the work got this stream's handle");
            assertEquals(ctx.handle().address(), seen[1], "the context was current while the work ran");
            s.synchronize();
            assertArrayEquals(new int[] {9, 9, 9, 9}, read(b));
        }
        b.close();
        ctx.close();
    }

    @Test
    void aWarmSubmissionMakesNoDriverCallButTheCurrentContextCheck() {
        DeviceBuffer b = ctx.allocate(4L * N);
        AtomicInteger runs = new AtomicInteger();
        try (Stream s = ctx.createStream()) {
            ForeignWork work = writes(b.asInts(), 1, runs);
            DeviceView[] used = {b.asInts()};
            s.submitForeign(work, used);
            Map<String, Integer> calls = sim.faults.callsOf(() -> s.submitForeign(work, used));
            assertEquals(Map.of("cuCtxGetCurrent", 1), calls, "a warm foreign submission calls the driver only to "
                    + "see that the context is current (the library's own calls bypass Gatun)");
            assertEquals(2, runs.get());
        }
        b.close();
        ctx.close();
    }

    @Test
    void aBufferClosedWhileForeignWorkUsesItIsFreedOnlyAfterThatWork() {
        DeviceBuffer b = ctx.allocate(4L * N);
        AtomicInteger runs = new AtomicInteger();
        Stream s = ctx.createStream();
        sim.gpu.hold(s.handle()); // the GPU is busy on s: the foreign write stays queued
        s.submitForeign(writes(b.asInts(), 3, runs), b.asInts());
        b.close();
        ctx.reap();
        assertEquals(1, sim.gpu.liveDeviceAllocations(), "the queued foreign write still uses the buffer");
        assertEquals(1, ctx.diagnostics().counters().pendingRetirements());
        sim.gpu.release(s.handle());
        ctx.reap();
        assertEquals(0, sim.gpu.liveDeviceAllocations());
        assertEquals(List.of(), sim.gpu.violations(), "the buffer was freed while the foreign write was queued");
        s.close();
        ctx.close();
    }

    @Test
    void aSynchronousReadIsOrderedAfterForeignWorkQueuedOnAnotherStream() {
        DeviceBuffer b = ctx.allocate(4L * N);
        b.asInts().copyFrom(new int[N]);
        Stream s = ctx.createStream();
        sim.gpu.hold(s.state().handle()); // not s.handle(), which would order every synchronous operation after s
        s.submitForeign(writes(b.asInts(), 5, new AtomicInteger()), b.asInts());
        // A host wait: the simulated GPU runs held work that the read is ordered after, and only that.
        assertArrayEquals(new int[] {5, 5, 5, 5}, read(b), "the read saw the bytes before the foreign write");
        s.close();
        b.close();
        ctx.close();
    }

    @Test
    void everyRefusalComesBeforeTheWorkRunsOrAnyUseIsRecorded() {
        AtomicInteger runs = new AtomicInteger();
        DeviceBuffer b = ctx.allocate(4L * N);
        DeviceBuffer closed = ctx.allocate(4L * N);
        closed.close();
        Stream s = ctx.createStream();
        ForeignWork work = writes(b.asInts(), 1, runs);
        assertThrows(NullPointerException.class, () -> s.submitForeign(null, b.asInts()));
        assertThrows(NullPointerException.class, () -> s.submitForeign(work, b.asInts(), null));
        assertThrows(IllegalStateException.class, () -> s.submitForeign(work, b.asInts(), closed.bytes()));
        Stream gone = ctx.createStream();
        gone.close();
        assertThrows(IllegalStateException.class, () -> gone.submitForeign(work, b.asInts()));
        assertEquals(0, runs.get(), "a refused submission ran the work");

        // A sticky error poisons the context: the next submission fails fast, typed.
        sim.faults.replaceOnce("cuMemsetD32Async", CUDA_ERROR_ILLEGAL_ADDRESS);
        CudaException sticky = assertThrows(CudaException.class, () -> s.fill(b.asInts(), 1));
        LogCapture.expectPoisonedBy(sticky);
        assertThrows(ContextPoisonedException.class, () -> s.submitForeign(work, b.asInts()));
        assertEquals(0, runs.get(), "the work ran on a poisoned context");
        s.close();
        b.close();
        ctx.close();
    }

    @Test
    void aFailedWorkLeavesItsBuffersListedSoTheyWaitForTheStream() {
        DeviceBuffer b = ctx.allocate(4L * N);
        Stream s = ctx.createStream();
        sim.gpu.hold(s.handle());
        IllegalStateException thrown = assertThrows(IllegalStateException.class, () -> s.submitForeign(stream -> {
            // Queued part of its work, then failed: Gatun cannot know what reached the GPU.
            interposer.api().cuMemsetD32Async(b.address(), 2, N, stream);
            throw new IllegalStateException("library status 13");
        }, b.asInts()));
        assertEquals("library status 13", thrown.getMessage(), "the work's own exception reaches the caller");
        b.close();
        ctx.reap();
        assertEquals(1, sim.gpu.liveDeviceAllocations(), "a failed work's buffer was freed under its queued part");
        sim.gpu.release(s.handle());
        ctx.reap();
        assertEquals(List.of(), sim.gpu.violations());
        s.close();
        ctx.close();
    }

    @Test
    void foreignWorkOnACapturingStreamIsCapturedAndItsBuffersAreHeldByTheGraph() {
        DeviceBuffer b = ctx.allocate(4L * N);
        DeviceBuffer outside = ctx.allocate(4L * N);
        Stream s = ctx.createStream();
        AtomicInteger runs = new AtomicInteger();
        StreamCapture capture = s.beginCapture(CaptureMode.RELAXED, List.of(b));
        assertThrows(IllegalStateException.class, () -> s.submitForeign(writes(outside.asInts(), 1, runs),
                outside.asInts()), "a buffer outside the capture's list was admitted");
        s.submitForeign(writes(b.asInts(), 4, runs), b.asInts());
        try (Graph graph = capture.end()) {
            b.close();
            ctx.reap();
            assertEquals(List.of(), sim.gpu.danglingGraphUses(), "the graph names a buffer that was freed: the "
                    + "capture did not hold what the foreign work used");
            try (GraphExec exec = graph.instantiate()) {
                exec.launch(s);
            }
        }
        s.synchronize();
        ctx.reap();
        assertEquals(List.of(), sim.gpu.violations());
        s.close();
        outside.close();
        ctx.close();
    }

    /**
     * A use and a close as a Dekker pair: T1's submission is held at {@link SwitchPoint#USAGE_ADD},
     * after its open checks passed and just before its view's buffer lists the stream; T2 closes
     * the buffer and returns meanwhile (asserted); T1 goes on, reads the close and is refused
     * before its work runs.
     */
    @Test
    void aSubmissionRacingItsBuffersCloseIsRefusedBeforeItsWorkRuns() {
        DeviceBuffer b = ctx.allocate(4L * N);
        Stream s = ctx.createStream();
        AtomicInteger runs = new AtomicInteger();
        ForeignWork work = writes(b.asInts(), 6, runs);
        DeviceView view = b.asInts();
        Interposer.Stop beforeListing = interposer.stopAt(SwitchPoint.USAGE_ADD).onThread("T1");
        Background<Void> t1 = Background.run("T1", () -> s.submitForeign(work, view));
        beforeListing.awaitArrival();
        Background<Void> t2 = Background.run("T2", b::close);
        assertTrue(t2.awaitFinishedOrWaiting(), "the close waited for the held submission: the order cannot happen");
        assertNull(t2.joinFailure(), "the close threw");
        assertTrue(beforeListing.arrived() && !t1.finished(), "T1 is still held before listing its stream");
        beforeListing.release();
        assertInstanceOf(IllegalStateException.class, t1.joinFailure(), "a submission was admitted for a buffer "
                + "closed while it was being admitted");
        assertEquals(0, runs.get(), "the foreign work ran on a closed buffer");
        ctx.synchronize();
        ctx.reap();
        assertEquals(0, sim.gpu.liveDeviceAllocations());
        assertEquals(List.of(), sim.gpu.violations());
        s.close();
        ctx.close();
    }

    /**
     * The stream's close racing a submission: T1 is held inside its library's call (the
     * {@code cuMemsetD32Async} the work makes, under the stream's lock); T2 closes the stream and
     * is seen waiting (asserted: the close cannot pass the submission); then T1 goes on. The
     * write lands before the final fence, so the buffer closed after it is freed only once the
     * GPU passed it.
     */
    @Test
    void aStreamsCloseRacingASubmissionWaitsAndItsFinalFenceCoversTheWork() {
        DeviceBuffer b = ctx.allocate(4L * N);
        Stream s = ctx.createStream();
        MemorySegment raw = s.handle();
        sim.gpu.hold(raw);
        AtomicInteger runs = new AtomicInteger();
        Interposer.Stop inLibrary = interposer.stopBefore("cuMemsetD32Async").onThread("T1");
        Background<Void> t1 = Background.run("T1", () -> s.submitForeign(writes(b.asInts(), 8, runs), b.asInts()));
        inLibrary.awaitArrival();
        Background<Void> t2 = Background.run("T2", s::close);
        assertFalse(t2.awaitFinishedOrWaiting(), "the close passed a submission that holds the stream's lock");
        inLibrary.release();
        assertNull(t1.joinFailure(), "the submission that began before the close was refused");
        t2.join();
        b.close();
        ctx.reap();
        assertEquals(1, sim.gpu.liveDeviceAllocations(), "the buffer was freed before the closed stream ran the write");
        sim.gpu.release(raw);
        ctx.synchronize();
        ctx.reap();
        assertEquals(0, sim.gpu.liveDeviceAllocations());
        assertEquals(List.of(), sim.gpu.violations());
        ctx.close();
    }

    @Test
    void closeActionsRunOnceAfterTheCloseAndAreRefusedOnAClosedStream() {
        Stream s = ctx.createStream();
        List<String> ran = new ArrayList<>();
        s.onClose(() -> ran.add("first, closed=" + s.isClosed()));
        s.onClose(() -> {
            throw new IllegalStateException("a failing action");
        });
        s.onClose(() -> ran.add("third"));
        s.close();
        s.close();
        assertEquals(List.of("first, closed=true", "third"), ran, "each action once, in order, after the close, "
                + "the failing one not stopping the rest");
        assertThrows(IllegalStateException.class, () -> s.onClose(() -> ran.add("late")));
        assertEquals(2, ran.size());
        ctx.close();
    }

    @Test
    void theComputeStreamsCloseActionsRunAsItsContextClosesSoTheBuffersTheyCloseDoNotKeepItOpen() {
        DeviceBuffer workspace = ctx.allocate(1024);
        ctx.computeStream().onClose(workspace::close);
        ctx.close(); // would refuse with an open DEVICE_BUFFER, had the action not run first
        assertTrue(workspace.isClosed());
        assertTrue(ctx.isClosed());
        assertEquals(0, sim.gpu.liveDeviceAllocations());
    }
}
