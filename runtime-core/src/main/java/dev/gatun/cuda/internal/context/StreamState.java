package dev.gatun.cuda.internal.context;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The state behind one stream: its handle and context, and what fences need to know about it.
 * Recording a fence and beginning a capture on the stream are serialized on
 * {@link #captureLock()}, so that Gatun never records a retirement fence into a capture.
 *
 * <p>Every stream is registered with its context from creation until it is drained, so that a
 * synchronous operation can be ordered after the work queued on it, open or closed
 * ({@link SyncOrdering}).
 */
public final class StreamState {

    private static final AtomicLong IDS = new AtomicLong();

    private final ContextState context;
    private final MemorySegment handle;
    private final long id;
    private final Object captureLock = new Object();
    private volatile boolean closed;
    private volatile boolean drained;
    private volatile Evidence finalFence;
    private volatile CaptureScope captureScope;
    /**
     * Work was queued here that the context's synchronous operations are not yet ordered
     * after. Set after each submission, cleared by {@link SyncOrdering} before it records the
     * fence that covers it: a submission racing with the clear is then either covered by that
     * fence or flags the stream again.
     */
    private volatile boolean unordered;
    /** Its raw handle was handed out: work Gatun cannot see may be queued on it. */
    private volatile boolean exported;
    /** Guarded by captureLock: recorded as a Gatun capture began, covering the work queued before it. */
    private MemorySegment beforeCapture;

    public StreamState(ContextState context, MemorySegment handle) {
        this.context = context;
        this.handle = handle;
        this.id = IDS.incrementAndGet();
        context.ordering().register(this);
    }

    public ContextState context() {
        return context;
    }

    public MemorySegment handle() {
        return handle;
    }

    /** A process-unique number, for logs. */
    public long id() {
        return id;
    }

    public Object captureLock() {
        return captureLock;
    }

    public boolean closed() {
        return closed;
    }

    /**
     * Marks the stream closed (no new work) and returns its final fence, which the stream's own
     * retirement waits for; other owners' fences on this stream defer to it from now on.
     */
    public Evidence close() {
        Evidence last;
        synchronized (captureLock) {
            last = new FenceEvidence(this, true);
            finalFence = last;
            closed = true;
        }
        return last;
    }

    /** Polls the final fence of a closed stream (only the reaper thread polls). */
    int pollFinalFence() {
        Evidence last = finalFence;
        return drained ? 0 : last == null ? Evidence.PENDING : last.poll();
    }

    /** Whether all work ever submitted to this (closed) stream is known to be complete. */
    public boolean drained() {
        return drained;
    }

    /** Called by the stream's retirement once its final fence completed (or it was abandoned). */
    public void markDrained() {
        drained = true;
        context.ordering().deregister(this);
    }

    /**
     * Notes that work touching device memory was just queued on this stream (call after the
     * driver accepted it). One volatile read, and a write only when the flag changes.
     */
    public void submitted() {
        if (!unordered) {
            unordered = true;
        }
    }

    /** Notes that the raw handle left Gatun (interop): from now on every synchronous operation orders after it. */
    public void exported() {
        if (!exported) {
            exported = true;
            context.captures().untracked();
        }
    }

    /** Clears the unordered flag; returns whether work may have been queued since the last clear. */
    boolean takeUnordered() {
        if (exported) {
            return true;
        }
        if (!unordered) {
            return false;
        }
        unordered = false;
        return true;
    }

    /** Sets the flag again after a fence that should have covered the queued work could not be recorded. */
    void restoreUnordered() {
        unordered = true;
    }

    /** The final fence, recorded at close; null while open. */
    Evidence finalFence() {
        return finalFence;
    }

    /**
     * Whether the stream is capturing now (in any mode, begun by anyone), per the driver, which
     * is asked only when {@link CaptureCensus} says a capture is possible. Returns true too when
     * the query itself fails: not knowing means not recording.
     */
    public boolean capturing() {
        if (!context.captures().anyPossible()) {
            return false; // no capture is in progress in this context and none can begin unseen
        }
        return context.calls().streams().capturing(handle);
    }

    /** A mark to give {@link #mayHaveCaptured} once work is queued: read it just before queueing. */
    public int captureMark() {
        return context.captures().boundaries();
    }

    /**
     * Whether work queued on this stream since {@code mark} ({@link #captureMark()}) may have gone
     * into a capture, without taking {@link #captureLock()}: a Gatun capture that began or ended
     * in between moved the mark, and one open throughout is open still (its scope is set, or the
     * driver, asked when a capture is possible, reports it). Errs toward yes.
     */
    public boolean mayHaveCaptured(int mark) {
        return captureScope != null || context.captures().boundaries() != mark || capturing();
    }

    /** The scope of the Gatun capture in progress on this stream, or null. */
    public CaptureScope captureScope() {
        return captureScope;
    }

    /**
     * Set when a Gatun capture begins on this stream, cleared (null) when it ends or aborts. Call
     * under {@link #captureLock()}, right after the driver began or ended the capture.
     */
    public void setCaptureScope(CaptureScope scope) {
        captureScope = scope;
        if (scope == null && beforeCapture != null) {
            context.events().release(beforeCapture);
            beforeCapture = null;
        }
    }

    /**
     * Records, under {@link #captureLock()} and just before a Gatun capture begins, a fence after
     * the work queued so far, when synchronous operations are not yet ordered after it: while
     * the stream captures, nothing can be recorded on it, yet that work may still be running.
     *
     * @throws dev.gatun.cuda.CudaException when the fence cannot be recorded (the capture must not begin)
     */
    public void fenceBeforeCapture() {
        if (beforeCapture != null) { // left by a begin the driver refused
            context.events().release(beforeCapture);
            beforeCapture = null;
        }
        if (!unordered && !exported) {
            return;
        }
        MemorySegment event = context.events().acquire();
        try {
            // A pooled event of this stream's context, recorded on this open stream before its
            // capture begins (the caller holds the capture lock).
            context.calls().events().record(event, handle);
        } catch (RuntimeException e) {
            context.events().release(event);
            throw e;
        }
        beforeCapture = event;
    }

    /** The event recorded as the current capture began, or null. Call under {@link #captureLock()}. */
    MemorySegment fenceBeforeCaptureTaken() {
        return beforeCapture;
    }

    /**
     * Whether the stream is capturing: a Gatun capture is known without asking the driver; a
     * stream whose handle was exported is asked. Call under {@link #captureLock()}.
     */
    boolean inCapture() {
        return captureScope != null || exported && capturing();
    }

    /** Evidence that the work queued on this stream so far has completed. */
    public Evidence fence() {
        return new FenceEvidence(this, false);
    }

    @Override
    public String toString() {
        return "stream#" + id;
    }
}
