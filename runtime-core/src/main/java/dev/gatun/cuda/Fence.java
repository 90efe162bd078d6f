package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.CaptureScope;
import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.StreamState;
import java.lang.foreign.MemorySegment;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A one-shot cross-stream fence: recorded on one stream ({@link Stream#recordFence()}), waited
 * on by another ({@link Stream#waitFor(Fence)}) without blocking the host. The first wait
 * consumes it and returns its event to the context's pool; a second wait, or a close after the
 * wait, does nothing. Closing an unconsumed fence gives its event back without waiting. Before
 * either, {@link #onComplete()} gives a future for the work before it.
 */
public final class Fence implements AutoCloseable {

    private final CudaContext context;
    private final StreamState source;
    /**
     * The pooled event; null once consumed or closed. Taken under this fence's lock, so that an
     * {@link #onComplete} under way queues its wait before the event goes back to the pool.
     */
    private final AtomicReference<MemorySegment> event;
    /**
     * The capture it was recorded into (null: none; see {@link StreamState#captureOfNextWork()}):
     * a point of the graph, which a wait joins and a watch refuses.
     */
    private final CaptureScope capturedIn;

    private Fence(CudaContext context, StreamState source, MemorySegment event, CaptureScope capturedIn) {
        this.context = context;
        this.source = source;
        this.event = new AtomicReference<>(event);
        this.capturedIn = capturedIn;
    }

    /** Records a fence on {@code s}; call under its lock, which keeps a capture from beginning or ending meanwhile. */
    static Fence record(Stream stream, StreamState s) {
        ContextState state = stream.context().state();
        MemorySegment e = state.events().acquire();
        CaptureScope into;
        try {
            into = s.captureOfNextWork();
            // A pooled event and an open stream of the same context.
            state.calls().events().record(e, s.handle());
        } catch (RuntimeException | Error failed) {
            state.events().release(e);
            throw failed;
        }
        return new Fence(stream.context(), s, e, into);
    }

    /** The Gatun capture it was recorded into, {@link CaptureScope#FOREIGN}, or null. */
    CaptureScope capturedIn() {
        return capturedIn;
    }

    /** Queues a wait on it on {@code s} (under that stream's lock), once. */
    void consumeInto(Stream waiter, StreamState s) {
        waiter.context().checkSameDriver(context, "the fence"); // a stream may wait on another device's fence
        MemorySegment e = take();
        if (e == null) {
            return; // already consumed or closed: a second wait is a no-op
        }
        try {
            // The event was recorded by record() and not yet given back; the wait is enqueued
            // before the event returns to the pool, and a later re-record of a pooled event does
            // not affect a wait already enqueued.
            waiter.context().state().calls().streams().waitEvent(s.handle(), e);
        } finally {
            context.state().events().release(e);
        }
    }

    /** {@return whether the work before the fence has completed; true once consumed} Does not block. */
    public boolean isComplete() {
        MemorySegment e = event.get();
        if (e == null) {
            return true;
        }
        return context.state().calls().events().query(e);
    }

    /** {@return whether a wait has consumed this fence (or it was closed)} */
    public boolean isConsumed() {
        return event.get() == null;
    }

    /**
     * {@return a future completed once the work queued before this fence on its stream has completed,
     * with the default executor {@link ForkJoinPool#commonPool()}; see {@link #onComplete(Executor)}}
     */
    public CompletableFuture<Void> onComplete() {
        return onComplete(ForkJoinPool.commonPool());
    }

    /**
     * A future completed once the work queued before this fence on its stream has completed,
     * through one of the context's watch streams, as {@link Event#onComplete(Executor)} does (and
     * with the same guarantee: never before the work; later only when eight watches are pending
     * at once). Does not consume the fence: a stream may still wait on it, and any number of
     * futures may be asked for until then.
     *
     * @param executor where the future is completed, and so where its dependent actions run
     * @return a future completed once the fenced work has completed
     * @throws IllegalStateException when the fence was consumed by a wait or closed: its event is
     *     back in the context's pool (ask before the wait, or ask the waiting stream's
     *     {@link Stream#onComplete(Executor) onComplete} after it), or when its context is closed
     * @throws CaptureActiveException when it was recorded into a stream capture: it marks a point
     *     of the graph, and a wait on it would join the capture
     * @throws ContextPoisonedException when the context is poisoned already
     */
    public CompletableFuture<Void> onComplete(Executor executor) {
        Objects.requireNonNull(executor, "executor");
        if (capturedIn != null) {
            throw new CaptureActiveException(this + " was recorded into a stream capture, which makes it a point of the "
                    + "graph, not of work that runs; a completion future would join the capture. Ask Stream.onComplete "
                    + "after the graph launch instead.");
        }
        synchronized (this) { // a wait or close cannot give the event back before the watch's wait is queued
            MemorySegment e = event.get();
            if (e == null) {
                throw new IllegalStateException(this + " was consumed by a wait or closed, and its event is back in the "
                        + "context's pool; ask for its completion before waiting on it, or ask the waiting stream's "
                        + "onComplete after the wait");
            }
            return context.state().watches().after(e, null, executor, "Fence.onComplete");
        }
    }

    /** Takes the event for a wait or a close: null when already taken. */
    private synchronized MemorySegment take() {
        return event.getAndSet(null);
    }

    /** Gives the event back without waiting on it. Idempotent. */
    @Override
    public void close() {
        MemorySegment e = take();
        if (e != null) {
            context.state().events().release(e);
        }
    }

    @Override
    public String toString() {
        return "Fence[" + source + (isConsumed() ? ", consumed]" : "]");
    }
}
