package dev.gatun.cuda.internal.context;

import dev.gatun.cuda.CaptureActiveException;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * The ordering rule of synchronous operations: a synchronous copy (and anything else that
 * returns only when its device work is done) is ordered after all work already queued on its
 * context that may touch its operands — eager launches, asynchronous copies and graph
 * replays, on any stream of the context, open or closed but not yet drained.
 *
 * <p>The context knows every stream it created until the stream is drained. Each submission
 * flags its stream ({@link StreamState#submitted()}: a volatile read, no allocation, no driver
 * call); a synchronous operation makes its stream wait for each flagged stream (one event
 * record and one stream wait each) and clears the flags. A stream with nothing new since the
 * last synchronous operation costs nothing. This is coarser than tracking each buffer's users,
 * but it cannot miss work that reaches a buffer without naming it: a graph replay (whose
 * nodes baked the address in), a raw address passed to a kernel, a stream closed after
 * queueing a write.
 */
public final class SyncOrdering {

    private static final StreamState[] NONE = new StreamState[0];

    private final ContextState context;
    /** Streams of this context not yet drained; copy-on-write, so ordering iterates without locks or allocation. */
    private volatile StreamState[] streams = NONE;

    SyncOrdering(ContextState context) {
        this.context = context;
    }

    synchronized void register(StreamState stream) {
        StreamState[] next = Arrays.copyOf(streams, streams.length + 1);
        next[next.length - 1] = stream;
        streams = next;
    }

    synchronized void deregister(StreamState stream) {
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

    /** Streams registered now (for tests and diagnostics). */
    public int registered() {
        return streams.length;
    }

    /**
     * Makes {@code waiter}, a stream of this context, wait for the work queued so far on every
     * other stream of this context that has had work since the last time. Does not block the
     * host.
     *
     * @throws dev.gatun.cuda.CudaException when a fence cannot be recorded or waited on
     */
    public void orderAfterQueuedWork(StreamState waiter) {
        for (StreamState s : streams) {
            if (s != waiter && s.takeUnordered()) {
                try {
                    orderAfter(waiter, s);
                } catch (RuntimeException e) {
                    s.restoreUnordered();
                    throw e;
                }
            }
        }
    }

    /**
     * Makes {@code waiter}, a stream of another context of the same driver, wait for the work
     * queued so far on every stream of this context. The flags belong to this context's own
     * synchronous operations, so none is consumed and every stream is fenced.
     */
    public void orderForeignWaiterAfterAllWork(StreamState waiter) {
        for (StreamState s : streams) {
            orderAfter(waiter, s);
        }
    }

    /**
     * Makes {@code waiter} wait for the work queued so far on {@code stream} (of any context of
     * the same driver): through its final fence when it is closed, through the fence taken just
     * before its capture began when it is capturing (captured work is not queued), and through a
     * pooled event recorded now otherwise.
     */
    static void orderAfter(StreamState waiter, StreamState stream) {
        ContextState owner = stream.context();
        synchronized (stream.captureLock()) {
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
            if (stream.inCapture()) {
                MemorySegment before = stream.fenceBeforeCaptureTaken();
                if (before != null) {
                    // A pooled event recorded before the capture began; it goes back to the pool
                    // only when the capture ends, under the lock held here.
                    waiter.context().calls().streams().waitEvent(waiter.handle(), before);
                }
                return;
            }
            MemorySegment event = owner.events().acquire();
            try {
                // A pooled event of the stream's own context, recorded on that stream, which is
                // open (not drained) and not capturing, checked under the lock that capture begin
                // and stream close also take.
                owner.calls().events().record(event, stream.handle());
                // The waiter is an open stream of a context of the same driver; the wait is
                // enqueued before the pooled event can be recorded again by another user.
                waiter.context().calls().streams().waitEvent(waiter.handle(), event);
            } finally {
                owner.events().release(event);
            }
        }
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
