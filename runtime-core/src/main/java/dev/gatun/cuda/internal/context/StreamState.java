package dev.gatun.cuda.internal.context;

import dev.gatun.cuda.internal.driver.OutBlock;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The state behind one stream: its handle and context, its capture state, and what fences need
 * to know about it.
 *
 * <p><b>The stream's lock</b> ({@link #lock()}) is the one protocol for everything that queues
 * work on the stream or changes what queued work means (runtime-core/README.md, "One stream
 * protocol"). Held around: a submission's admission (the open check, the capture scope's hold
 * on what the work uses, the record of use) together with its driver call; a capture's begin
 * and end, each with its scope change; a fence or stream-ordered free that Gatun queues for
 * itself, with the capture check that guards it; an allocation's classification with its
 * driver call; and the close that records the final fence. So each of these happens wholly
 * before or wholly after the others, on any thread.
 *
 * <p>While the lock is held, the stream can stop capturing (a capture it joined ends on the
 * stream that began it) but never start: every way into a capture that Gatun sees goes through
 * this lock. Only a {@linkplain #exported() raw handle} lets code outside Gatun begin one
 * unseen. So a capture check made under the lock stays true for "not capturing" until the lock
 * is released, and errs toward "capturing" otherwise.
 *
 * <p>The lock is a leaf among stream locks: no other stream's lock is taken while it is held
 * (waits that must follow another stream are queued on the context's synchronous stream, which
 * never captures and needs no lock; see {@link SyncOrdering}), and nothing that retires an owner
 * runs under it.
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
    private final Object lock = new Object();
    private volatile boolean closed;
    private volatile boolean drained;
    private volatile Evidence finalFence;
    private volatile CaptureScope captureScope;
    /**
     * Work was queued here that the context's synchronous operations are not yet ordered
     * after. Set after each submission, cleared by {@link SyncOrdering} (under {@link #lock()})
     * just before it records the fence that covers it: a submission racing with the clear is then
     * either covered by that fence or flags the stream again, and a capture's begin sees either
     * the flag or the fence.
     */
    private volatile boolean unordered;
    /** Its raw handle was handed out: work Gatun cannot see may be queued on it. */
    private volatile boolean exported;
    /** Guarded by lock: recorded as a Gatun capture began, covering the work queued before it. */
    private MemorySegment beforeCapture;
    /** Guarded by lock: the stream-ordered allocations counted and kept in this stream's order. */
    private final StreamLedger ledger = new StreamLedger();
    /** Guarded by lock: the out-parameter of the stream-ordered allocations made under it (no thread-local lookup). */
    private final OutBlock allocationOut = new OutBlock(Long.BYTES);

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

    /** The stream's lock: see the class comment. */
    public Object lock() {
        return lock;
    }

    /** What stream-ordered allocations count and keep in this stream's order; use only under {@link #lock()}. */
    public StreamLedger ledger() {
        return ledger;
    }

    /**
     * The block {@code cuMemAllocAsync} and {@code cuMemAllocFromPoolAsync} write the address into,
     * for the allocations made on this stream; use only under {@link #lock()}, which makes it
     * exclusive to one call at a time.
     */
    public OutBlock allocationOut() {
        return allocationOut;
    }

    public boolean closed() {
        return closed;
    }

    /**
     * Refuses work on a closed stream; call under {@link #lock()}, before admitting the work, so
     * that no work is queued after the final fence that the stream's close recorded.
     */
    public void checkOpen() {
        if (closed) {
            throw new IllegalStateException(this + " is closed");
        }
    }

    /**
     * Marks the stream closed (no new work) and returns its final fence, which the stream's own
     * retirement waits for; other owners' fences on this stream defer to it from now on. A
     * second call returns the same fence.
     */
    public Evidence close() {
        synchronized (lock) {
            if (finalFence == null) {
                finalFence = new FenceEvidence(this, true);
                closed = true;
            }
            return finalFence;
        }
    }

    /** Polls the final fence of a closed stream (only the reaper thread polls). */
    int pollFinalFence() {
        Evidence last = finalFence;
        return drained ? 0 : last == null ? Evidence.PENDING : last.poll();
    }

    /** As {@link #pollFinalFence()}, blocking until the final fence completed where it can. */
    int awaitFinalFence() {
        Evidence last = finalFence;
        return drained ? 0 : last == null ? Evidence.PENDING : last.await();
    }

    /** Whether all work ever submitted to this (closed) stream is known to be complete. */
    public boolean drained() {
        return drained;
    }

    /** Called by the stream's retirement once its final fence completed (or it was abandoned). */
    public void markDrained() {
        synchronized (lock) {
            drained = true;
            releaseFenceBeforeCapture(); // a joined capture's, which nothing can wait on any more
        }
        // Nothing is counted on a closed stream, so its ledger is final: moved into the context's
        // counters while the stream is still registered, so that no snapshot misses it.
        context.stats().fold(this);
        context.ordering().deregister(this);
    }

    /**
     * Notes that work touching device memory was just queued on this stream (call after the
     * driver accepted it). One volatile read, and a write only when the flag changes.
     */
    public void submitted() {
        SwitchPoint.UNORDERED_SET.reach();
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

    /**
     * Whether work may have been queued since the last {@link #takeUnordered()}: a lock-free look,
     * so that a synchronous operation takes the lock only of the streams that have new work.
     */
    boolean mayHaveUnorderedWork() {
        SwitchPoint.UNORDERED_TAKE.reach();
        return unordered || exported;
    }

    /**
     * Clears the unordered flag; returns whether work may have been queued since the last clear.
     * Call under {@link #lock()}, with the fence that covers that work: a capture's begin reads the
     * flag under that lock ({@link #fenceBeforeCapture()}).
     */
    boolean takeUnordered() {
        SwitchPoint.UNORDERED_TAKE.reach();
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

    /**
     * Whether work queued now goes into a capture (call under {@link #lock()}, just before
     * queueing it): a Gatun capture this stream began or joined, or one the driver reports (a
     * capture begun through an exported raw handle). Errs toward yes; see the class comment.
     */
    public boolean queuesIntoCapture() {
        return captureScope() != null || capturing();
    }

    /**
     * The capture that work queued now goes into (call under {@link #lock()}, just before queueing
     * it): the scope of the Gatun capture this stream began or joined, {@link CaptureScope#FOREIGN}
     * for a capture the driver reports that Gatun did not begin, or null. Errs toward a capture.
     */
    public CaptureScope captureOfNextWork() {
        CaptureScope scope = captureScope();
        if (scope != null) {
            return scope;
        }
        return capturing() ? CaptureScope.FOREIGN : null;
    }

    /**
     * The scope of the open Gatun capture that work queued on this stream goes into: the one
     * begun on it, or the one it joined by waiting on an event recorded in that capture; null
     * when none. A joined capture is left when it ends on the stream that began it, which marks
     * its scope closed under that stream's lock, right after the driver ended it: read under this
     * stream's lock, an open scope may have just ended (admission then errs toward holding), and
     * a closed one has.
     */
    public CaptureScope captureScope() {
        CaptureScope scope = captureScope;
        return scope != null && scope.isOpen() ? scope : null;
    }

    /**
     * Set when a Gatun capture begins on this stream, cleared (null) when it ends or aborts. Call
     * under {@link #lock()}, right after the driver began or ended the capture.
     */
    public void setCaptureScope(CaptureScope scope) {
        captureScope = scope;
        if (scope == null) {
            releaseFenceBeforeCapture();
        }
    }

    /**
     * Joins the open Gatun capture {@code scope} (call under {@link #lock()}, before the driver
     * wait on an event recorded in it): work queued here from then on is captured too, so the
     * scope must hold what it uses; and the work queued before, which keeps running, gets a
     * fence for synchronous operations to wait on, as at a capture's begin.
     *
     * @throws dev.gatun.cuda.CudaException when the fence cannot be recorded (nothing joined)
     */
    public void join(CaptureScope scope) {
        if (captureScope() == scope) {
            return; // joined already (or began it)
        }
        fenceBeforeCapture();
        captureScope = scope;
    }

    /**
     * Records, under {@link #lock()} and just before this stream starts capturing (a Gatun
     * capture begins on it, or it joins one), a fence after the work queued so far, when
     * synchronous operations are not yet ordered after it: while the stream captures, nothing can
     * be recorded on it, yet that work may still be running.
     *
     * @throws dev.gatun.cuda.CudaException when the fence cannot be recorded (the capture must not begin)
     */
    public void fenceBeforeCapture() {
        releaseFenceBeforeCapture(); // left by a begin the driver refused, or by a joined capture that ended
        SwitchPoint.FENCE_BEFORE_CAPTURE_READ.reach();
        if (!unordered && !exported) {
            return;
        }
        MemorySegment event = context.events().acquire();
        try {
            // A pooled event of this stream's context, recorded on this open stream before it
            // starts capturing (the caller holds the stream's lock).
            context.calls().events().record(event, handle);
        } catch (RuntimeException e) {
            context.events().release(event);
            throw e;
        }
        SwitchPoint.FENCE_BEFORE_CAPTURE_WRITE.reach();
        beforeCapture = event;
    }

    /** Gives the fence taken before a capture back to the pool once nothing can wait on it (under {@link #lock()}). */
    private void releaseFenceBeforeCapture() {
        if (beforeCapture != null) {
            context.events().release(beforeCapture);
            beforeCapture = null;
        }
    }

    /**
     * The event recorded as the current capture began or was joined, or null when the stream is
     * not capturing or nothing was queued before. Call under {@link #lock()}, when
     * {@link #queuesIntoCapture()}.
     */
    MemorySegment fenceBeforeCaptureTaken() {
        return beforeCapture;
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
