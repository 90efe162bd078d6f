package dev.gatun.cuda.internal.context;

import java.lang.foreign.MemorySegment;

/**
 * Evidence that the work queued on one stream up to now has completed: a pooled event
 * recorded on the stream. If it cannot be recorded now (the stream is capturing, or the record
 * fails), it is recorded at a later poll: an event recorded later still follows the work in
 * stream order, while an event recorded earlier would prove nothing. If the stream has been
 * closed meanwhile, the stream's own final fence stands in ({@link StreamState#drained()}).
 */
final class FenceEvidence implements Evidence {

    private final StreamState stream;
    /** The stream's own last fence: recorded even though the stream is closing (its handle lives until this completes). */
    private final boolean finalFence;
    /** Written under the stream's lock; read by the reaper without it. */
    private volatile MemorySegment event;

    FenceEvidence(StreamState stream, boolean finalFence) {
        this.stream = stream;
        this.finalFence = finalFence;
        tryRecord();
    }

    private void tryRecord() {
        if (stream.closed() && !finalFence) {
            return;
        }
        ContextState context = stream.context();
        synchronized (stream.lock()) {
            if ((stream.closed() && !finalFence) || stream.queuesIntoCapture()) {
                return;
            }
            MemorySegment e;
            try {
                e = context.events().acquire();
            } catch (RuntimeException cannotCreate) {
                return; // retried at the next poll
            }
            // e is a live pooled event and stream a live, non-capturing stream of the same context
            // (checked under its lock, which every way into a capture takes).
            if (context.calls().events().tryRecord(e, stream.handle()) == 0) {
                event = e;
            } else {
                context.events().release(e);
            }
        }
    }

    @Override
    public int poll() {
        if (event == null) {
            if (stream.closed() && !finalFence) {
                return stream.drained() ? 0 : stream.pollFinalFence();
            }
            tryRecord();
            if (event == null) {
                return PENDING;
            }
        }
        // event is a live pooled event recorded outside any capture.
        return stream.context().calls().events().poll(event);
    }

    /**
     * Makes {@code waiter} (a synchronous stream of any context of the same driver, which needs no
     * lock) wait for the work this fence covers, recording the fence first if it could not be
     * recorded before.
     *
     * @return false when the fence still cannot be recorded (nothing was enqueued)
     * @throws dev.gatun.cuda.CudaException when the driver refuses the wait
     */
    boolean enqueueWait(StreamState waiter) {
        synchronized (stream.lock()) {
            if (event == null) {
                tryRecord();
            }
            MemorySegment e = event;
            if (e == null) {
                return false;
            }
            // e is a live pooled event of this fence's context, and release() cannot hand it back
            // to the pool (where it could be destroyed) while this lock is held.
            waiter.context().calls().streams().waitEvent(waiter.handle(), e);
            return true;
        }
    }

    @Override
    public void release() {
        synchronized (stream.lock()) {
            if (event != null) {
                stream.context().events().release(event);
                event = null;
            }
        }
    }

    @Override
    public String toString() {
        return "fence on " + stream + (event == null ? " (not recorded yet)" : "");
    }
}
