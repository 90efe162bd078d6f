package dev.gatun.cuda.internal.context;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The state behind one stream: its handle and context, and what fences need to know about it.
 * Recording a fence and beginning a capture on the stream are serialized on
 * {@link #captureLock()}, so that Gatun never records a retirement fence into a capture.
 */
public final class StreamCore {

    private static final int CAPTURE_STATUS_NONE = CudaDriver.CU_STREAM_CAPTURE_STATUS_NONE();

    private final ContextCore context;
    private final MemorySegment handle;
    private final long id;
    private final Object captureLock = new Object();
    private volatile boolean closed;
    private volatile boolean drained;
    private volatile Evidence finalFence;
    private volatile CaptureScope captureScope;

    public StreamCore(ContextCore context, MemorySegment handle, long id) {
        this.context = context;
        this.handle = handle;
        this.id = id;
    }

    public ContextCore context() {
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

    /** Called by the stream's retirement once its final fence completed. */
    public void markDrained() {
        drained = true;
    }

    /**
     * Whether the stream is capturing now (in any mode, begun by anyone), per the driver.
     * Returns true too when the query itself fails: not knowing means not recording.
     */
    public boolean capturing() {
        MemorySegment out = context.scratch();
        // Safety: scratch holds the one int the driver writes; handle is a live stream.
        int r = context.api().cuStreamIsCapturing(handle, out);
        return r != 0 || out.get(ValueLayout.JAVA_INT, 0) != CAPTURE_STATUS_NONE;
    }

    /** The scope of the Gatun capture in progress on this stream, or null. */
    public CaptureScope captureScope() {
        return captureScope;
    }

    /** Set when a Gatun capture begins on this stream, cleared (null) when it ends or aborts. */
    public void setCaptureScope(CaptureScope scope) {
        captureScope = scope;
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
