package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.StreamState;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A one-shot cross-stream fence: recorded on one stream ({@link Stream#recordFence()}), waited
 * on by another ({@link Stream#waitFor(Fence)}) without blocking the host. The first wait
 * consumes it and returns its event to the context's pool; a second wait, or a close after the
 * wait, does nothing. Closing an unconsumed fence gives its event back without waiting.
 */
public final class Fence implements AutoCloseable {

    private final CudaContext context;
    private final StreamState source;
    private final AtomicReference<MemorySegment> event;

    private Fence(CudaContext context, StreamState source, MemorySegment event) {
        this.context = context;
        this.source = source;
        this.event = new AtomicReference<>(event);
    }

    static Fence record(Stream stream, StreamState s) {
        ContextState state = stream.context().state();
        MemorySegment e = state.events().acquire();
        try {
            // A pooled event and an open stream of the same context.
            state.calls().events().record(e, s.handle());
        } catch (RuntimeException failed) {
            state.events().release(e);
            throw failed;
        }
        return new Fence(stream.context(), s, e);
    }

    void consumeInto(Stream waiter, StreamState s) {
        waiter.context().checkSameDriver(context, "the fence"); // a stream may wait on another device's fence
        MemorySegment e = event.getAndSet(null);
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

    /** Whether the work before the fence has completed; true once consumed. Does not block. */
    public boolean isComplete() {
        MemorySegment e = event.get();
        if (e == null) {
            return true;
        }
        return context.state().calls().events().query(e);
    }

    /** Whether a wait has consumed this fence (or it was closed). */
    public boolean isConsumed() {
        return event.get() == null;
    }

    /** Gives the event back without waiting on it. Idempotent. */
    @Override
    public void close() {
        MemorySegment e = event.getAndSet(null);
        if (e != null) {
            context.state().events().release(e);
        }
    }

    @Override
    public String toString() {
        return "Fence[" + source + (isConsumed() ? ", consumed]" : "]");
    }
}
