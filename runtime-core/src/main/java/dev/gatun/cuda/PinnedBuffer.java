package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.StreamState;
import dev.gatun.cuda.internal.memory.PinnedMemory;
import dev.gatun.cuda.internal.transfer.Ranges;
import java.lang.foreign.MemorySegment;

/**
 * Page-locked host memory ({@code cuMemHostAlloc}), the fast path for asynchronous transfers.
 *
 * <p>While a transfer through this buffer may be in flight, its host bytes must not be read,
 * written, reused or freed: {@link #segment()} and every host access wait for the last transfer
 * first; a new transfer waits for the previous one; {@link #close()} defers the free until the
 * transfer is proven complete. The transfer states are COMPLETE, UNFENCED (queued, no fence
 * yet) and EVENT_RECORDED (see {@code TransferCompletion}); a failed submission reports its own
 * error even when its fence record fails too, and a buffer whose fence could not be recorded
 * stays UNFENCED until a fence recorded later on the same stream completes.
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
     * {@return the host bytes, after waiting for the last transfer through this buffer} Do not hold on to
     * the segment across a later transfer: ask again after queueing one.
     */
    public MemorySegment segment() {
        awaitTransfer();
        return resource.view();
    }

    /** Blocks until the last transfer through this buffer has completed. */
    public void awaitTransfer() {
        synchronized (resource) {
            resource.checkOpen();
            resource.awaitTransfer("PinnedBuffer.awaitTransfer");
        }
    }

    /** {@return the state of the last transfer (COMPLETE, UNFENCED or EVENT_RECORDED); does not wait} */
    public String transferState() {
        synchronized (resource) {
            return resource.state().name();
        }
    }

    void uploadTo(Stream stream, StreamState s, DeviceView destination, long sourceOffset) {
        long n = destination.byteLength();
        synchronized (resource) {
            resource.checkOpen();
            context.state().calls().live(UPLOAD); // the transfer's raw calls do not check for poison
            Ranges.checkRange(sourceOffset, n, resource.size(), "upload source", resource);
            context.checkSame(stream.context(), "the stream");
            resource.awaitTransfer(UPLOAD);
            synchronized (s.lock()) {
                s.checkOpen();
                destination.useOn(context, s);
                resource.submit(UPLOAD, s, true, destination.address(), sourceOffset, n);
            }
            context.state().stats().hostToDeviceCopies.increment();
            context.state().stats().hostToDeviceBytes.add(n);
        }
    }

    void downloadFrom(Stream stream, StreamState s, long destinationOffset, DeviceView source) {
        long n = source.byteLength();
        synchronized (resource) {
            resource.checkOpen();
            context.state().calls().live(DOWNLOAD); // the transfer's raw calls do not check for poison
            Ranges.checkRange(destinationOffset, n, resource.size(), "download destination", resource);
            context.checkSame(stream.context(), "the stream");
            resource.awaitTransfer(DOWNLOAD);
            synchronized (s.lock()) {
                s.checkOpen();
                source.useOn(context, s);
                resource.submit(DOWNLOAD, s, false, source.address(), destinationOffset, n);
            }
            context.state().stats().deviceToHostCopies.increment();
            context.state().stats().deviceToHostBytes.add(n);
        }
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
        synchronized (resource) { // not while a transfer through this buffer is being submitted
            super.close();
        }
    }
}
