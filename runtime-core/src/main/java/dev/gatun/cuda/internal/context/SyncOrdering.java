package dev.gatun.cuda.internal.context;

import dev.gatun.cuda.CaptureActiveException;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;

/**
 * The ordering rule of synchronous operations: a synchronous copy (and anything else that
 * returns only when its device work is done) is ordered after all work already queued on its
 * context that may touch its operands — eager launches, asynchronous copies and graph
 * replays, on any stream of the context, open or closed but not yet drained.
 *
 * <p>The context knows every stream it created until the stream is drained. Each submission
 * flags its stream ({@link StreamState#submitted()}: a volatile read, no allocation, no driver
 * call); a synchronous operation makes the context's synchronous stream wait for each flagged
 * stream (one event record and one stream wait each) and clears the flags. A stream with
 * nothing new since the last synchronous operation costs nothing. This is coarser than
 * tracking each buffer's users, but it cannot miss work that reaches a buffer without naming
 * it: a graph replay (whose nodes baked the address in), a raw address passed to a kernel, a
 * stream closed after queueing a write.
 *
 * <p>Taking the flags and queueing the waits is one step: {@link #orderAfterQueuedWork} runs
 * under this context's ordering lock, so a synchronous operation that starts after another has
 * taken a stream's flag finds that stream's wait already queued on the synchronous stream, ahead
 * of its own copy (every synchronous operation of the context runs on that one stream). A flag
 * is given back when its wait could not be queued, whatever was thrown.
 *
 * <p>Waits are queued on the synchronous stream, which Gatun never captures and whose handle
 * never leaves Gatun, under the lock of the stream waited for and without a lock of its own:
 * stream locks are never nested. A user stream that must follow other streams (a relaunch of a
 * graph that frees memory other streams used, {@link #relayAfter}) waits on one event of the
 * synchronous stream recorded after those waits.
 */
public final class SyncOrdering {

    private static final StreamState[] NONE = new StreamState[0];

    private final ContextState context;
    /** Streams of this context not yet drained; copy-on-write, so ordering iterates without locks or allocation. */
    private volatile StreamState[] streams = NONE;
    /** Guards {@link #streams}' replacement (never held while a stream's lock is taken). */
    private final Object registry = new Object();
    /** Makes "take the flags, queue the waits" one step for the context's synchronous operations. */
    private final Object ordering = new Object();

    SyncOrdering(ContextState context) {
        this.context = context;
    }

    void register(StreamState stream) {
        synchronized (registry) {
            StreamState[] next = Arrays.copyOf(streams, streams.length + 1);
            next[next.length - 1] = stream;
            streams = next;
        }
    }

    void deregister(StreamState stream) {
        synchronized (registry) {
            StreamState[] now = streams;
            for (int i = 0; i < now.length; i++) {
                if (now[i] == stream) {
                    StreamState[] next = new StreamState[now.length - 1];
                    System.arraycopy(now, 0, next, 0, i);
                    System.arraycopy(now, i + 1, next, i, now.length - i - 1);
                    streams = next;
                    return;
                }
            }
        }
    }

    /** The streams registered now: a snapshot, not to be modified. */
    StreamState[] registeredStreams() {
        return streams;
    }

    /** Streams registered now (for tests and diagnostics). */
    public int registered() {
        return streams.length;
    }

    /**
     * Makes the context's synchronous stream wait for the work queued so far on every other
     * stream of this context that has had work since the last time. Does not block the host
     * (beyond other synchronous operations' ordering). Call with no stream's lock held.
     *
     * @throws dev.gatun.cuda.CudaException when a fence cannot be recorded or waited on
     */
    public void orderAfterQueuedWork() {
        StreamState waiter = context.syncStream();
        synchronized (ordering) {
            for (StreamState s : streams) {
                if (s != waiter && s.mayHaveUnorderedWork()) {
                    orderAfterUnordered(waiter, s);
                }
            }
        }
    }

    /**
     * Takes {@code stream}'s "unordered" flag and queues the wait that covers the work it marks, as
     * one step under the stream's lock. A capture's begin reads the flag under that lock to decide
     * whether it needs a fence of its own ({@link StreamState#fenceBeforeCapture()}): taken outside
     * it, the flag could be clear by the time the capture began while its fence was still to be
     * recorded, and this would then find the stream capturing with no fence to wait on, and skip
     * the work queued before the capture (found by the schedule explorer at the switch points
     * around the flag, 2026-12-06). The flag is given back when the wait could not be queued,
     * whatever was thrown.
     */
    private static void orderAfterUnordered(StreamState waiter, StreamState stream) {
        synchronized (stream.lock()) {
            if (!stream.takeUnordered()) {
                return; // another synchronous operation took it meanwhile, and queued its wait first
            }
            boolean queued = false;
            try {
                orderAfter(waiter, stream);
                queued = true;
            } finally {
                if (!queued) {
                    stream.restoreUnordered(); // an Error too: the next synchronous operation must fence it
                }
            }
        }
    }

    /**
     * Makes {@code waiter} (this context's synchronous stream, or another context's of the same
     * driver) wait for the work queued so far on every other stream of this context, flagged or
     * not. No flag is consumed: the flags belong to this context's own synchronous operations. For
     * a peer's synchronous operation, and for the out-of-memory ladder, which waits for
     * stream-ordered frees too (they flag no stream: they touch no operand of a synchronous
     * operation). Call with no stream's lock held.
     */
    public void orderAfterAllWork(StreamState waiter) {
        for (StreamState s : streams) {
            if (s != waiter) {
                orderAfter(waiter, s);
            }
        }
    }

    /**
     * Phase one of ordering a user stream after {@code sources} (streams of any context of this
     * driver): makes the synchronous stream wait for the work queued on each so far, then records
     * a pooled event after those waits. The caller, under its own stream's lock, waits on the
     * event and then {@linkplain EventPool#release releases} it. Call with no stream's lock held.
     *
     * @return the event, or null when {@code sources} is empty
     */
    public MemorySegment relayAfter(List<StreamState> sources) {
        if (sources.isEmpty()) {
            return null;
        }
        StreamState relay = context.syncStream();
        for (StreamState s : sources) {
            orderAfter(relay, s);
        }
        MemorySegment event = context.events().acquire();
        try {
            // A pooled event of this context, recorded on its synchronous stream, which is open
            // (the caller's context is) and never captures.
            context.calls().events().record(event, relay.handle());
        } catch (RuntimeException | Error e) {
            context.events().release(event);
            throw e;
        }
        return event;
    }

    /**
     * Makes {@code waiter}, a synchronous stream (never capturing, so it needs no lock), wait for
     * the work queued so far on {@code stream} (of any context of the same driver): through its
     * final fence when it is closed, through the fence taken just before it started capturing
     * when it is capturing (captured work is not queued), and through a pooled event recorded now
     * otherwise.
     */
    static void orderAfter(StreamState waiter, StreamState stream) {
        ContextState owner = stream.context();
        synchronized (stream.lock()) {
            if (stream.drained()) {
                return;
            }
            Evidence last = stream.finalFence();
            if (last != null) {
                if (!((FenceEvidence) last).enqueueWait(waiter)) {
                    throw new IllegalStateException("a synchronous operation cannot be ordered after the closed "
                            + stream + ": its final fence could not be recorded; retry, or synchronize the context");
                }
                return;
            }
            if (stream.queuesIntoCapture()) {
                MemorySegment before = stream.fenceBeforeCaptureTaken();
                if (before != null) {
                    // A pooled event recorded before the stream started capturing; it goes back to
                    // the pool only under the lock held here.
                    waiter.context().calls().streams().waitEvent(waiter.handle(), before);
                }
                return;
            }
            MemorySegment event = owner.events().acquire();
            try {
                // A pooled event of the stream's own context, recorded on that stream, which is
                // open (not drained) and not capturing, checked under its lock.
                owner.calls().events().record(event, stream.handle());
                // The waiter is a synchronous stream of a context of the same driver; the wait is
                // enqueued before the pooled event can be recorded again by another user.
                waiter.context().calls().streams().waitEvent(waiter.handle(), event);
            } finally {
                owner.events().release(event);
            }
        }
    }

    /**
     * The stream of this context whose lock the calling thread holds, or null: for code that must
     * not run under a stream's lock (the out-of-memory ladder, which retires and synchronizes).
     */
    public StreamState streamLockedByCurrentThread() {
        for (StreamState s : streams) {
            if (Thread.holdsLock(s.lock())) {
                return s;
            }
        }
        return null;
    }

    /** Whether a Gatun capture (of any mode) that the calling thread began is open on a stream of this context. */
    public boolean captureBegunOnCurrentThread() {
        Thread me = Thread.currentThread();
        for (StreamState s : streams) {
            CaptureScope scope = s.captureScope();
            if (scope != null && scope.begunOn(me)) {
                return true;
            }
        }
        return false;
    }

    /**
     * Refuses a synchronous operation on a thread that holds a global-mode capture of this
     * context: the driver would invalidate that capture instead of running it.
     */
    public void refuseDuringOwnCapture(String operation) {
        if (context.gate().capturingOnCurrentThread()) {
            throw new CaptureActiveException(operation + " is synchronous, and this thread is capturing a graph in "
                    + "global mode on device " + context.device() + ": the driver would invalidate the capture. End "
                    + "the capture first, or queue an asynchronous copy on the capturing stream instead.");
        }
    }
}
