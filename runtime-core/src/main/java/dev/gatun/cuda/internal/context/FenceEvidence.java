package dev.gatun.cuda.internal.context;

import java.lang.foreign.MemorySegment;

/**
 * Evidence that the work queued on one stream up to now has completed: a pooled event
 * recorded on the stream. If it cannot be recorded now (the stream is capturing, or the record
 * fails), it is recorded at a later poll: an event recorded later still follows the work in
 * stream order, while an event recorded earlier would prove nothing. If the stream has been
 * closed meanwhile, the stream's own final fence stands in ({@link StreamCore#drained()}).
 */
final class FenceEvidence implements Evidence {

    private final StreamCore stream;
    /** The stream's own last fence: recorded even though the stream is closing (its handle lives until this completes). */
    private final boolean finalFence;
    private MemorySegment event;

    FenceEvidence(StreamCore stream, boolean finalFence) {
        this.stream = stream;
        this.finalFence = finalFence;
        tryRecord();
    }

    private void tryRecord() {
        if (stream.closed() && !finalFence) {
            return;
        }
        ContextCore context = stream.context();
        synchronized (stream.captureLock()) {
            if ((stream.closed() && !finalFence) || stream.capturing()) {
                return;
            }
            MemorySegment e;
            try {
                e = context.events().acquire();
            } catch (RuntimeException cannotCreate) {
                return; // retried at the next poll
            }
            // Safety: e is a live pooled event and stream a live, non-capturing stream of the
            // same context (checked under the lock that capture begin also takes).
            if (context.api().cuEventRecord(e, stream.handle()) == 0) {
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
        // Safety: event is a live pooled event recorded outside any capture.
        return stream.context().api().cuEventQuery(event);
    }

    @Override
    public void release() {
        if (event != null) {
            stream.context().events().release(event);
            event = null;
        }
    }

    @Override
    public String toString() {
        return "fence on " + stream + (event == null ? " (not recorded yet)" : "");
    }
}
