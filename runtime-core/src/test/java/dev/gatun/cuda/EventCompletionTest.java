package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.testing.LogCapture;
import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;

/**
 * Event.onComplete and Fence.onComplete on the simulated driver, which applies a watch stream's
 * cuStreamWaitEvent before its host function: ordering behind a held stream, fences, an event
 * never recorded, a re-record, detaching, a poisoned and a closed context, a capture, the cap on
 * watch streams, and 10,000 pending futures.
 *
 * <p>Whether a future completed too early is checked without timing: futures completed on the
 * dispatcher ({@link #INLINE}) complete in the order their host functions fired, so once a later
 * future of a free stream has completed ({@link #dispatcherCaughtUp()}), an earlier one whose
 * host function had fired would be complete too.
 */
class EventCompletionTest {

    private static final int ILLEGAL_ADDRESS = CudaDriver.CUDA_ERROR_ILLEGAL_ADDRESS();
    /** Completes on the thread that hands the future over: Gatun's dispatcher. */
    private static final Executor INLINE = Runnable::run;

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();

    @AfterEach
    void closeTheContext() {
        if (!ctx.isClosed()) {
            sim.gpu.holdAll(); // nothing of a failed test is released by accident: the close's drain runs it all
            ctx.close();
        }
    }

    /** Waits until the dispatcher has handed over every host function that fired before now. */
    private void dispatcherCaughtUp() {
        try (Stream free = ctx.createStream()) {
            free.onComplete(INLINE).join();
        }
    }

    @Test
    void anEventFutureCompletesOnlyAfterTheWorkBeforeItsRecord() {
        try (Stream s = ctx.createStream(); Event e = ctx.createEvent(); DeviceBuffer b = ctx.allocate(64)) {
            sim.gpu.hold(s.handle());
            s.memset(b.bytes(), (byte) 1);
            e.record(s);
            CompletableFuture<Void> f = e.onComplete(INLINE);
            assertEquals(2, sim.gpu.queuedOperations(s.handle()), "nothing is queued on the recording stream");
            assertEquals(1, sim.gpu.hostFunctionsQueued());
            assertEquals(1, ctx.diagnostics().watchStreams());

            dispatcherCaughtUp();
            assertFalse(f.isDone(), "the memset before the record is held, so the watch's host function cannot have fired");
            assertEquals(1, ctx.diagnostics().pendingCompletions());

            sim.gpu.release(s.handle());
            f.join();
            assertTrue(e.query());
            assertEquals(0, ctx.diagnostics().pendingCompletions());
        }
    }

    @Test
    void aFenceFutureCompletesAfterTheWorkBeforeTheFenceAndLeavesItToBeWaitedOn() {
        try (Stream s = ctx.createStream(); Stream waiter = ctx.createStream(); DeviceBuffer b = ctx.allocate(64)) {
            sim.gpu.hold(s.handle());
            s.memset(b.bytes(), (byte) 1);
            Fence fence = s.recordFence();
            CompletableFuture<Void> f = fence.onComplete(INLINE);
            CompletableFuture<Void> second = fence.onComplete(INLINE);
            assertFalse(fence.isConsumed(), "asking for its completion does not consume the fence");
            dispatcherCaughtUp();
            assertFalse(f.isDone() || second.isDone(), "the work before the fence is held");

            // Last, as no later fence may take its event from the pool while the watches wait: the
            // simulated driver lets a later record that completed satisfy a wait for an earlier one.
            waiter.waitFor(fence);
            assertTrue(fence.isConsumed());
            sim.gpu.release(s.handle());
            CompletableFuture.allOf(f, second).join();
            assertEquals(0, ctx.diagnostics().pendingCompletions());
        }
    }

    @Test
    void aConsumedOrClosedFenceIsRefusedBeforeAnyDriverCall() {
        try (Stream s = ctx.createStream(); Stream waiter = ctx.createStream()) {
            Fence consumed = s.recordFence();
            waiter.waitFor(consumed);
            IllegalStateException e = assertThrows(IllegalStateException.class, consumed::onComplete);
            assertTrue(e.getMessage().contains("was consumed by a wait or closed"), e.getMessage());

            Fence closed = s.recordFence();
            closed.close();
            assertThrows(IllegalStateException.class, closed::onComplete);
            assertEquals(0, sim.gpu.hostFunctionsQueued());
            assertEquals(0, ctx.diagnostics().watchStreams());
        }
    }

    @Test
    void anEventNeverRecordedCompletesAtOnce() {
        try (Event e = ctx.createEvent()) {
            assertTrue(e.query());
            e.onComplete().join();
            assertEquals(0, ctx.diagnostics().pendingCompletions());
        }
    }

    @Test
    void aRecordAfterTheCallDoesNotMoveTheWait() {
        try (Stream first = ctx.createStream(); Stream later = ctx.createStream(); Event e = ctx.createEvent()) {
            sim.gpu.hold(first.handle());
            sim.gpu.hold(later.handle());
            e.record(first);
            CompletableFuture<Void> f = e.onComplete(INLINE);
            e.record(later); // still held: the event's last record now is this one

            sim.gpu.release(first.handle());
            f.join(); // the record the call saw completed
            assertFalse(e.query(), "the later record is still held");
            sim.gpu.release(later.handle());
        }
    }

    @Test
    void aFailedWaitOrLaunchLeavesNoFuturePendingAndAFailedCreateNoWatchStream() {
        int invalid = CudaDriver.CUDA_ERROR_INVALID_VALUE();
        try (Stream s = ctx.createStream(); Event e = ctx.createEvent()) {
            sim.gpu.hold(s.handle());
            e.record(s);
            sim.faults.replaceOnce("cuStreamCreateWithPriority", invalid);
            assertThrows(CudaException.class, e::onComplete);
            assertEquals(0, ctx.diagnostics().watchStreams());

            sim.faults.replaceOnce("cuStreamWaitEvent", invalid);
            assertThrows(CudaException.class, e::onComplete);
            assertEquals(0, sim.gpu.hostFunctionsQueued(), "no host function without its wait");

            sim.faults.replaceOnce("cuLaunchHostFunc", invalid);
            assertThrows(CudaException.class, e::onComplete);
            assertEquals(0, ctx.diagnostics().pendingCompletions());

            CompletableFuture<Void> f = e.onComplete(INLINE); // the failures left the watch streams usable
            sim.gpu.release(s.handle());
            f.join();
            assertEquals(2, ctx.diagnostics().watchStreams(), "the stream whose launch failed still holds its wait, so a second was made");
        }
    }

    @Test
    void aClosedEventIsRefusedAndAnEventClosedWhileWatchedLivesUntilTheWatchPassed() {
        Event refused = ctx.createEvent();
        refused.close();
        assertThrows(IllegalStateException.class, refused::onComplete);
        assertEquals(0, sim.gpu.hostFunctionsQueued());

        try (Stream s = ctx.createStream()) {
            sim.gpu.hold(s.handle());
            Event e = ctx.createEvent();
            MemorySegment handle = e.handle();
            e.record(s);
            CompletableFuture<Void> f = e.onComplete(INLINE);
            e.close();
            ctx.reap();
            assertTrue(sim.gpu.eventAlive(handle), "the watch stream still waits on it");

            sim.gpu.release(s.handle());
            f.join();
            ctx.reap();
            assertFalse(sim.gpu.eventAlive(handle), "destroyed once the watch stream passed its fence");
        }
    }

    @Test
    void cancellingDetachesTheFutureAndTheWatchStreamIsReused() {
        try (Stream s = ctx.createStream(); Event e = ctx.createEvent()) {
            sim.gpu.hold(s.handle());
            e.record(s);
            CompletableFuture<Void> cancelled = e.onComplete(INLINE);
            assertTrue(cancelled.cancel(true));
            assertEquals(0, ctx.diagnostics().pendingCompletions());

            sim.gpu.release(s.handle());
            for (int i = 0; i < 100; i++) {
                e.record(s);
                e.onComplete(INLINE).join();
            }
            assertEquals(1, ctx.diagnostics().watchStreams(), "an idle watch stream is used again rather than a new one made");
            assertTrue(cancelled.isCancelled());
        }
    }

    @Test
    void aStickyErrorFailsPendingEventAndFenceFuturesAndLaterCallsFailFast() {
        Stream s = ctx.computeStream();
        try (Event e = ctx.createEvent()) {
            sim.gpu.hold(s.handle());
            e.record(s);
            Fence fence = s.recordFence();
            CompletableFuture<Void> ef = e.onComplete();
            CompletableFuture<Void> ff = fence.onComplete();
            sim.faults.replaceOnce("cuStreamQuery", ILLEGAL_ADDRESS);
            CudaException thrown = assertThrows(CudaException.class, s::query);
            // The dispatcher polls the copy stream with cuStreamQuery while futures are pending, so
            // it may meet the injected error first: then the query above fails as poisoned, and the
            // first error is the dispatcher's.
            CudaException sticky = thrown instanceof ContextPoisonedException p ? p.firstError() : thrown;
            LogCapture.expectPoisonedBy(sticky);

            for (CompletableFuture<Void> f : List.of(ef, ff)) {
                CompletionException failed = assertThrows(CompletionException.class, f::join);
                ContextPoisonedException poisoned = assertInstanceOf(ContextPoisonedException.class, failed.getCause());
                assertSame(sticky, poisoned.firstError());
            }
            long queued = sim.gpu.hostFunctionsQueued();
            assertThrows(ContextPoisonedException.class, e::onComplete);
            assertThrows(ContextPoisonedException.class, fence::onComplete);
            assertEquals(queued, sim.gpu.hostFunctionsQueued(), "a poisoned context queues nothing");
            fence.close();
        }
    }

    @Test
    void closingTheContextCompletesTheFuturesAndDestroysTheWatchStreams() {
        Event e = ctx.createEvent();
        sim.gpu.holdAll();
        e.record(ctx.computeStream());
        Fence fence = ctx.computeStream().recordFence();
        CompletableFuture<Void> ef = e.onComplete();
        CompletableFuture<Void> ff = fence.onComplete();
        e.close();
        assertEquals(2, ctx.diagnostics().watchStreams());

        ctx.close(); // its drain runs the held work, then the watches' host functions
        CompletableFuture.allOf(ef, ff).join();
        assertEquals(0, ctx.diagnostics().watchStreams());
        assertEquals(0, sim.gpu.liveStreams(), "the watch streams were destroyed with the context's own");
        assertEquals(List.of(), sim.gpu.violations());
        assertThrows(IllegalStateException.class, fence::onComplete, "the context is closed");
        fence.close();
    }

    @Test
    void anEventOrFenceRecordedIntoACaptureIsRefused() {
        Stream s = ctx.computeStream();
        try (Event e = ctx.createEvent()) {
            Fence fence;
            try (StreamCapture capture = s.beginCapture(CaptureMode.THREAD_LOCAL)) {
                e.record(s);
                fence = s.recordFence();
                CaptureActiveException refused = assertThrows(CaptureActiveException.class, e::onComplete);
                assertTrue(refused.getMessage().contains("recorded into a stream capture"), refused.getMessage());
                assertThrows(CaptureActiveException.class, fence::onComplete);
                capture.abort();
            }
            assertThrows(CaptureActiveException.class, e::onComplete, "its last record is still the captured one");
            assertEquals(0, sim.gpu.hostFunctionsQueued());
            assertEquals(0, ctx.diagnostics().watchStreams());
            fence.close();

            e.record(s);
            e.onComplete().join(); // recorded outside the capture, it works
        }
    }

    @Test
    void pastTheCapFuturesShareWatchStreamsAndNeverCompleteEarly() {
        int n = 8 + 1;
        List<Stream> streams = new ArrayList<>();
        List<Event> events = new ArrayList<>();
        try {
            List<CompletableFuture<Void>> futures = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                Stream s = ctx.createStream();
                Event e = ctx.createEvent();
                streams.add(s);
                events.add(e);
                sim.gpu.hold(s.handle());
                e.record(s);
                futures.add(e.onComplete(INLINE));
            }
            assertEquals(8, ctx.diagnostics().watchStreams(), "at most eight watch streams");
            assertEquals(n, ctx.diagnostics().pendingCompletions());

            for (int i = 1; i < n; i++) {
                sim.gpu.release(streams.get(i).handle());
            }
            for (int i = 1; i < 8; i++) {
                futures.get(i).join();
            }
            dispatcherCaughtUp();
            assertFalse(futures.get(0).isDone(), "its event is still held");
            assertFalse(futures.get(8).isDone(), "it shares the first watch stream and waits behind the first watch");

            sim.gpu.release(streams.get(0).handle());
            CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).join();
            assertEquals(8, ctx.diagnostics().watchStreams());
            assertEquals(0, ctx.diagnostics().pendingCompletions());
        } finally {
            events.forEach(Event::close);
            streams.forEach(Stream::close);
        }
    }

    @Test
    void tenThousandPendingEventFuturesNeedNoNewThreadAndAtMostEightStreams(TestReporter reporter) {
        try (Stream s = ctx.createStream(); Event e = ctx.createEvent()) {
            dispatcherCaughtUp(); // the dispatcher exists from here on
            int before = liveThreads();
            int streamsBefore = sim.gpu.liveStreams();
            sim.gpu.hold(s.handle());
            e.record(s);
            List<CompletableFuture<Void>> futures = new ArrayList<>(10_000);
            for (int i = 0; i < 10_000; i++) {
                futures.add(e.onComplete(INLINE));
            }
            assertEquals(10_000, ctx.diagnostics().pendingCompletions());
            int whilePending = liveThreads();
            assertEquals(8, ctx.diagnostics().watchStreams());
            assertTrue(sim.gpu.liveStreams() <= streamsBefore + 8, "no stream beyond the eight watch streams");

            sim.gpu.release(s.handle());
            CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).join();
            int after = liveThreads();
            reporter.publishEntry("threads", before + " before, " + whilePending + " with 10,000 pending, " + after
                    + " after");
            assertTrue(whilePending <= before && after <= before, "threads grew: " + before + " -> " + whilePending
                    + " -> " + after);
            assertEquals(0, ctx.diagnostics().pendingCompletions());
        }
    }

    /** The JVM's live platform threads (the module reads no java.management). */
    private static int liveThreads() {
        return Thread.getAllStackTraces().size();
    }
}
