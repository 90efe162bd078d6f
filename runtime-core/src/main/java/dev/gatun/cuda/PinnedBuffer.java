package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.CaptureScope;
import dev.gatun.cuda.internal.context.StreamState;
import dev.gatun.cuda.internal.memory.PinnedMemory;
import dev.gatun.cuda.internal.transfer.Ranges;
import java.lang.foreign.MemorySegment;

/**
 * Page-locked host memory ({@code cuMemHostAlloc}), the fast path for asynchronous transfers.
 *
 * <p>While GPU work may still touch this buffer, its host bytes must not be read, written,
 * reused or freed: {@link #segment()} and every host access wait first for the last transfer
 * through it and for the launches queued so far of every graph executable that copies to or from
 * it. A new transfer does not make the host wait: it is ordered after the previous one and after
 * those launches on the GPU (on the previous transfer's stream by stream order, on another stream
 * by a wait on that transfer's fence), so upload, kernel and download back into the same buffer
 * can be queued while the host goes on with other work. {@link #close()} defers the free until
 * the transfer is proven complete (and until no graph holds the buffer any more).
 *
 * <p>The transfer states are COMPLETE, UNFENCED (queued, no fence yet) and EVENT_RECORDED (see
 * {@code TransferCompletion}); a failed submission reports its own error even when its fence
 * record fails too, and a buffer whose fence could not be recorded stays UNFENCED until a fence
 * recorded later on the same stream completes. A transfer made while its stream captures a graph
 * ({@link Stream#beginCapture}) is a copy node of that graph, not a transfer in this sense: it
 * runs at each launch of an executable made from the graph, which holds this buffer, and it
 * leaves the transfer state as it was; the host waits for the previous transfer before capturing
 * it, since nothing on the GPU orders a later launch after that transfer.
 *
 * <p>The segment is invalidated when the buffer is closed (its arena is closed), so a stale
 * reference fails with {@link IllegalStateException} instead of touching freed memory.
 */
public final class PinnedBuffer extends Owner {

    private static final String UPLOAD = "cuMemcpyHtoDAsync";
    private static final String DOWNLOAD = "cuMemcpyDtoHAsync";

    private final CudaContext context;
    private final PinnedMemory resource;

    private PinnedBuffer(CudaContext context, PinnedMemory memory) {
        super(memory);
        this.context = context;
        this.resource = memory;
    }

    static PinnedBuffer allocate(CudaContext context, long bytes, boolean writeCombined) {
        return new PinnedBuffer(context, PinnedMemory.allocate(context.state(), bytes, writeCombined, context.ladder()));
    }

    /** {@return the context this buffer was allocated in} */
    public CudaContext context() {
        return context;
    }

    /** {@return the buffer's size in bytes} */
    public long byteSize() {
        return resource.size();
    }

    /**
     * {@return the host bytes, after waiting for the last transfer through this buffer and for the launches
     * queued so far of every graph executable that copies to or from it} Do not hold on to the
     * segment across a later transfer or launch: ask again after queueing one.
     */
    public MemorySegment segment() {
        awaitTransfer();
        return resource.view();
    }

    /**
     * Blocks until the last transfer through this buffer has completed, and the launches queued so
     * far of every graph executable that copies to or from it (one made from a graph that captured
     * a transfer through it, or that has a copy node naming it).
     */
    public void awaitTransfer() {
        synchronized (resource.transferLock()) {
            resource.checkOpen();
            resource.awaitTransfer("PinnedBuffer.awaitTransfer");
        }
    }

    /**
     * {@return where the last transfer queued on a stream is; does not wait} A transfer captured into
     * a graph leaves it as it was.
     */
    public TransferState transferState() {
        synchronized (resource.transferLock()) {
            return resource.state();
        }
    }

    void uploadTo(Stream stream, StreamState s, DeviceView destination, long sourceOffset) {
        transfer(stream, s, destination, sourceOffset, true);
        context.state().stats().hostToDeviceCopies.increment();
        context.state().stats().hostToDeviceBytes.add(destination.byteSize());
    }

    void downloadFrom(Stream stream, StreamState s, long destinationOffset, DeviceView source) {
        transfer(stream, s, source, destinationOffset, false);
        context.state().stats().deviceToHostCopies.increment();
        context.state().stats().deviceToHostBytes.add(source.byteSize());
    }

    /** Queues one transfer between {@code device} and these bytes at {@code offset}, on {@code s}. */
    private void transfer(Stream stream, StreamState s, DeviceView device, long offset, boolean toDevice) {
        String operation = toDevice ? UPLOAD : DOWNLOAD;
        long n = device.byteSize();
        synchronized (resource.transferLock()) {
            resource.checkOpen();
            context.state().calls().live(operation); // the transfer's raw calls do not check for poison
            Ranges.checkRange(offset, n, resource.size(), toDevice ? "upload source" : "download destination",
                    resource);
            context.checkSame(stream.context(), "the stream");
            // Out of the stream's lock: ordering after other streams takes their locks.
            resource.prepareTransfer(operation, s);
            MemorySegment relay = resource.relayAfterLaunches(s);
            try {
                while (!queue(operation, s, relay, device, offset, toDevice)) {
                    // Going into a capture while the last transfer may still run: wait for it here,
                    // out of the stream's lock, then queue again (it is complete now, and stays so
                    // under the transfer lock).
                    resource.awaitLastTransfer(operation);
                }
            } finally {
                if (relay != null) {
                    context.state().events().release(relay); // the wait on it is queued, or nothing is
                }
            }
        }
    }

    /**
     * Under the transfer lock: queues the transfer on {@code s} under its lock, ordered after the
     * last one on the GPU; false, with nothing queued, when it would go into a capture before the
     * last transfer is known complete ({@link PinnedMemory#awaitsOnHostBefore}).
     */
    private boolean queue(String operation, StreamState s, MemorySegment relay, DeviceView device, long offset,
            boolean toDevice) {
        synchronized (s.lock()) {
            s.checkOpen();
            CaptureScope capture = s.captureOfNextWork();
            if (resource.awaitsOnHostBefore(capture)) {
                return false;
            }
            device.useOn(context, s);
            resource.submit(operation, s, capture, relay, toDevice, device.address(), offset, device.byteSize());
            return true;
        }
    }

    /**
     * For a graph copy node of {@code graphContext} that reads or writes {@code bytes} of this
     * buffer from {@code offset} on ({@code role}, in refusals): checks that it is open, of that
     * context, and holds the range; returns the host address the range starts at.
     */
    long nodeRange(CudaContext graphContext, long offset, long bytes, String role) {
        graphContext.checkSame(context, "the " + role);
        resource.checkOpen();
        Ranges.checkRange(offset, bytes, resource.size(), role, resource);
        return resource.view().address() + offset;
    }

    /**
     * The memory behind this buffer, for a batch of copies ({@link CopyBatch}) that fences it
     * itself, and for the graph nodes that copy to and from it.
     */
    PinnedMemory memory() {
        return resource;
    }

    @Override
    public void close() {
        synchronized (resource.transferLock()) { // not while a transfer through this buffer is being submitted
            super.close();
        }
    }
}
