package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.driver.Checked;
import dev.gatun.cuda.testing.LogCapture;
import dev.gatun.cuda.testing.Simulated;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinWorkerThread;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;
import org.slf4j.event.Level;

/**
 * Stream.onComplete on the simulated driver, whose host functions run through Gatun's real
 * upcall stub when the work queued before them has run: ordering, the dispatcher and executors,
 * cancellation, a capturing stream, a poisoned and a closed context, and 10,000 pending futures.
 */
class CompletionTest {

    private static final int ILLEGAL_ADDRESS = CudaDriver.CUDA_ERROR_ILLEGAL_ADDRESS();
    /** Completes on the thread that hands the future over: Gatun's dispatcher. */
    private static final Executor INLINE = Runnable::run;

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();

    @AfterEach
    void closeTheContext() {
        if (!ctx.isClosed()) {
            ctx.close(); // settles whatever a failed test left pending
        }
    }

    @Test
    void aFutureCompletesOnlyAfterTheWorkQueuedBeforeIt() {
        try (Stream s = ctx.createStream(); Stream other = ctx.createStream(); DeviceBuffer b = ctx.allocate(64)) {
            sim.gpu.hold(s.handle());
            sim.gpu.hold(other.handle());
            s.memset(b.bytes(), (byte) 1);
            CompletableFuture<Void> f = s.onComplete();
            other.memset(b.bytes(), (byte) 2);
            CompletableFuture<Void> g = other.onComplete();
            assertEquals(2, sim.gpu.hostFunctionsQueued());
            assertEquals(2, ctx.diagnostics().pendingCompletions());

            sim.gpu.release(other.handle());
            g.join();
            assertFalse(f.isDone(), "the memset before it is still held, so its host function cannot have fired");
            assertEquals(1, ctx.diagnostics().pendingCompletions());

            sim.gpu.release(s.handle());
            f.join();
            assertEquals(0, ctx.diagnostics().pendingCompletions());
            assertEquals(0, sim.gpu.queuedOperations(s.handle()));
        }
    }

    @Test
    void futuresOfOneStreamCompleteInTheOrderTheyWereQueued() {
        try (Stream s = ctx.createStream(); DeviceBuffer b = ctx.allocate(64)) {
            sim.gpu.hold(s.handle());
            List<Integer> order = new ArrayList<>(); // written on the dispatcher only (INLINE)
            List<CompletableFuture<Void>> all = new ArrayList<>();
            for (int i = 0; i < 50; i++) {
                s.memset(b.bytes(), (byte) i);
                int n = i;
                all.add(s.onComplete(INLINE).thenRun(() -> order.add(n)));
            }
            sim.gpu.release(s.handle());
            CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).join();
            List<Integer> expected = new ArrayList<>();
            for (int i = 0; i < 50; i++) {
                expected.add(i);
            }
            assertEquals(expected, order);
        }
    }

    @Test
    void dependentsRunOnTheChosenExecutorNeverOnTheThreadThatRanTheHostFunction() {
        try (Stream s = ctx.createStream()) {
            sim.gpu.hold(s.handle());
            CompletableFuture<Thread> common = s.onComplete().thenApply(_ -> Thread.currentThread());
            AtomicInteger tasks = new AtomicInteger();
            Executor counting = task -> {
                tasks.incrementAndGet();
                ForkJoinPool.commonPool().execute(task);
            };
            CompletableFuture<Void> counted = s.onComplete(counting);
            CompletableFuture<Thread> inline = s.onComplete(INLINE).thenApply(_ -> Thread.currentThread());
            sim.gpu.release(s.handle()); // the simulated driver runs the host functions on this thread

            ForkJoinWorkerThread worker = assertInstanceOf(ForkJoinWorkerThread.class, common.join());
            assertSame(ForkJoinPool.commonPool(), worker.getPool());
            counted.join();
            assertEquals(1, tasks.get(), "the future was handed to its executor once");
            Thread dispatcher = inline.join();
            assertEquals("gatun-completions", dispatcher.getName());
            assertTrue(dispatcher.isDaemon());
            assertFalse(dispatcher == Thread.currentThread());
        }
    }

    @Test
    void cancellingAFutureDetachesItAndItsHostFunctionIsIgnored() {
        try (Stream s = ctx.createStream(); DeviceBuffer b = ctx.allocate(64)) {
            sim.gpu.hold(s.handle());
            s.memset(b.bytes(), (byte) 1);
            CompletableFuture<Void> cancelled = s.onComplete(INLINE);
            CompletableFuture<Void> completedByUser = s.onComplete(INLINE);
            CompletableFuture<Void> kept = s.onComplete(INLINE);
            assertEquals(3, ctx.diagnostics().pendingCompletions());

            assertTrue(cancelled.cancel(true));
            assertTrue(completedByUser.complete(null));
            assertEquals(1, ctx.diagnostics().pendingCompletions(), "only the untouched future is still waited for");
            assertEquals(4, sim.gpu.queuedOperations(s.handle()),
                    "the memset and all three host functions stay queued: the GPU work is not cancelled");

            sim.gpu.release(s.handle()); // all three host functions fire
            kept.join();
            assertTrue(cancelled.isCancelled());
            assertFalse(completedByUser.isCompletedExceptionally());
            assertEquals(0, ctx.diagnostics().pendingCompletions());
        }
    }

    @Test
    void aCapturingStreamIsRefusedBeforeAnyDriverCall() {
        Stream s = ctx.computeStream();
        try (StreamCapture capture = s.beginCapture(CaptureMode.THREAD_LOCAL)) {
            CaptureActiveException e = assertThrows(CaptureActiveException.class, s::onComplete);
            assertTrue(e.getMessage().contains("is capturing a graph"), e.getMessage());
            capture.abort();
        }
        assertEquals(0, sim.gpu.hostFunctionsQueued());
        assertEquals(0, ctx.diagnostics().pendingCompletions());
        s.onComplete().join(); // the stream works once the capture is gone
    }

    @Test
    void aStickyErrorFailsEveryPendingFutureWithThePoison() {
        Stream s = ctx.computeStream();
        sim.gpu.holdAll();
        List<CompletableFuture<Void>> pending = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            pending.add(s.onComplete());
        }
        sim.faults.replaceOnce("cuStreamQuery", ILLEGAL_ADDRESS);
        CudaException thrown = assertThrows(CudaException.class, s::query);
        // The dispatcher polls with cuStreamQuery while futures are pending and may meet the
        // injected error first: then the query above fails as poisoned, and the first error is the dispatcher's.
        CudaException sticky = thrown instanceof ContextPoisonedException p ? p.firstError() : thrown;
        LogCapture.expectPoisonedBy(sticky);

        for (CompletableFuture<Void> f : pending) {
            CompletionException e = assertThrows(CompletionException.class, f::join);
            ContextPoisonedException poisoned = assertInstanceOf(ContextPoisonedException.class, e.getCause());
            assertSame(sticky, poisoned.firstError());
        }
        assertEquals(0, ctx.diagnostics().pendingCompletions());
        assertThrows(ContextPoisonedException.class, s::onComplete, "a poisoned context queues nothing");
        assertEquals(100, sim.gpu.hostFunctionsQueued());
    }

    @Test
    void theDispatcherNoticesAStickyErrorNoOtherCallReports() {
        sim.gpu.holdAll();
        CompletableFuture<Void> f = ctx.computeStream().onComplete();
        // The real driver reports a sticky error from every call and runs no host function
        // after it; here only the dispatcher's probe (a stream query) calls the driver.
        sim.faults.replaceAlways("cuStreamQuery", ILLEGAL_ADDRESS);
        CompletionException e = assertThrows(CompletionException.class, f::join);
        assertInstanceOf(ContextPoisonedException.class, e.getCause());
        assertTrue(ctx.diagnostics().poisonedBy().isPresent());
        LogCapture.expect(Level.ERROR, Checked.class, "context poisoned by a sticky error", "cuStreamQuery");
        sim.faults.clear();
    }

    @Test
    void closingTheContextCompletesFuturesWhoseWorkRanAndFailsTheRest() {
        sim.gpu.holdAll();
        CompletableFuture<Void> drained = ctx.computeStream().onComplete();
        ctx.close(); // the close's drain runs the held work and its host function
        drained.join();

        Simulated other = new Simulated();
        CudaContext second = other.context();
        other.gpu.holdAll();
        CompletableFuture<Void> stranded = second.computeStream().onComplete();
        // A drain that fails: the host function never runs, and the future must not wait forever.
        other.faults.replaceOnce("cuCtxSynchronize", CudaDriver.CUDA_ERROR_INVALID_VALUE());
        assertThrows(CudaException.class, second::close);
        CompletionException e = assertThrows(CompletionException.class, stranded::join);
        IllegalStateException closed = assertInstanceOf(IllegalStateException.class, e.getCause());
        assertTrue(closed.getMessage().contains("was closed before the host function behind this future ran"),
                closed.getMessage());
        assertEquals(0, second.diagnostics().pendingCompletions());
    }

    @Test
    void tenThousandPendingFuturesCompleteWithoutANewThread(TestReporter reporter) {
        Stream s = ctx.computeStream();
        s.onComplete(INLINE).join(); // the dispatcher exists from here on
        int before = liveThreads();
        sim.gpu.holdAll();
        ConcurrentLinkedQueue<Thread> completedOn = new ConcurrentLinkedQueue<>();
        List<CompletableFuture<Void>> futures = new ArrayList<>(10_000);
        for (int i = 0; i < 10_000; i++) {
            futures.add(s.onComplete(INLINE).thenRun(() -> completedOn.add(Thread.currentThread())));
        }
        assertEquals(10_000, ctx.diagnostics().pendingCompletions());
        int whilePending = liveThreads();
        sim.gpu.release(ctx.computeStream().handle());
        CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).join();
        int after = liveThreads();
        reporter.publishEntry("threads", before + " before, " + whilePending + " with 10,000 pending, " + after + " after");
        assertTrue(whilePending <= before && after <= before, "threads grew: " + before + " -> " + whilePending
                + " -> " + after);
        assertEquals(10_000, completedOn.size());
        assertTrue(completedOn.stream().allMatch(t -> t.getName().equals("gatun-completions")));
        assertEquals(0, ctx.diagnostics().pendingCompletions());
    }

    /** The JVM's live platform threads (the module reads no java.management). */
    private static int liveThreads() {
        return Thread.getAllStackTraces().size();
    }
}
