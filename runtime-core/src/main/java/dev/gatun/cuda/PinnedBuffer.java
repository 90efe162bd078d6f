package dev.gatun.cuda;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.Evidence;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.Retirement;
import dev.gatun.cuda.internal.context.StreamState;
import dev.gatun.cuda.internal.context.TransferCompletion;
import dev.gatun.cuda.internal.transfer.Ranges;
import java.lang.foreign.Arena;
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

    private static final String HOST_ALLOC = "cuMemHostAlloc";
    private static final String UPLOAD = "cuMemcpyHtoDAsync";
    private static final String DOWNLOAD = "cuMemcpyDtoHAsync";

    private final CudaContext context;
    private final Resource resource;

    private static final class Resource extends NativeResource {
        final long address;
        final long size;
        final boolean writeCombined;
        final Arena views = Arena.ofShared();
        final MemorySegment view;
        final TransferCompletion completion = new TransferCompletion();
        /** The buffer's own fence event, taken from the pool at the first transfer. */
        MemorySegment event;
        StreamState lastStream;
        // The transfer being submitted, read by the two steps below: they are built once, so a
        // transfer allocates no closure. Guarded by this resource's monitor.
        boolean upload;
        long device;
        MemorySegment host;
        long bytes;
        final TransferCompletion.Step transfer = () -> upload
                // The host range is inside this pinned buffer, which cannot be freed or touched by
                // the host until the fence recorded after it completes; the device range is
                // checked and its allocation lists this stream.
                ? context.calls().memory().tryCopyToDevice(device, host, bytes, lastStream.handle())
                : context.calls().memory().tryCopyToHost(host, device, bytes, lastStream.handle());
        // The buffer's own pooled event, recorded on the transfer's open stream.
        final TransferCompletion.Step record = () -> context.calls().events().tryRecord(event, lastStream.handle());
        /** Waits for the recorded fence (a host synchronization). */
        final TransferCompletion.Step waitForFence = () -> {
            context.stats().forcedSynchronizations.increment();
            // The buffer's own event, recorded after its last transfer.
            return context.calls().events().trySynchronize(event);
        };
        /** UNFENCED: only a fence recorded now, on the same stream, follows the transfer. */
        final TransferCompletion.Step refence = () -> {
            StreamState stream = lastStream;
            synchronized (stream.lock()) {
                if (stream.closed()) { // its final fence follows the transfer
                    return stream.drained() ? 0 : Evidence.PENDING;
                }
                if (stream.queuesIntoCapture()) {
                    return CudaDriver.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED();
                }
                // Own event, open non-capturing stream of this context.
                return context.calls().events().tryRecord(event, stream.handle());
            }
        };

        Resource(ContextState contextState, long address, long size, boolean writeCombined) {
            super(contextState, OwnerKind.PINNED_BUFFER);
            this.address = address;
            this.size = size;
            this.writeCombined = writeCombined;
            // Safety: cuMemHostAlloc returned `size` bytes at `address`; the view's arena is
            // closed before the memory is freed, so the view can never reach freed memory.
            this.view = MemorySegment.ofAddress(address).reinterpret(size, views, null);
        }

        /** False if the views could not be closed (another thread was inside a call using them). */
        boolean viewsClosed;

        @Override
        protected void beforeRetire() {
            try {
                views.close();
                viewsClosed = true;
            } catch (IllegalStateException inUse) {
                // Another thread is inside a call that uses the segment: freeing the memory
                // could let that code read freed memory, so this buffer is leaked instead.
                viewsClosed = false;
            }
        }

        @Override
        protected Retirement.Release howToFree() {
            if (!viewsClosed) {
                return () -> CudaDriver.CUDA_ERROR_INVALID_VALUE(); // abandoned by the queue, with a log line
            }
            return () -> {
                // The fences of every stream that moved bytes through this buffer completed (or
                // the device was synchronized), and its views are closed.
                int r = context.calls().memory().freeHost(address);
                if (r == 0 && event != null) {
                    context.events().release(event);
                    event = null;
                }
                return r;
            };
        }

        @Override
        protected boolean synchronizingFree() {
            return true;
        }

        @Override
        public String identity() {
            return "PinnedBuffer#" + id() + " (" + size + " bytes" + (writeCombined ? ", write-combined" : "")
                    + ", device " + context.device() + ")";
        }
    }

    private PinnedBuffer(CudaContext context, long address, long size, boolean writeCombined) {
        Resource r = new Resource(context.state(), address, size, writeCombined);
        super(r);
        this.context = context;
        this.resource = r;
    }

    static PinnedBuffer allocate(CudaContext context, long bytes, boolean writeCombined) {
        ContextState contextState = context.state();
        contextState.calls().live(HOST_ALLOC);
        long address;
        // A zero-byte buffer still owns one byte so that every buffer has a real allocation.
        // Pinned allocation may synchronize: gate it.
        try (var _ = contextState.enterSection(HOST_ALLOC)) {
            address = contextState.calls().memory().allocateHost(Math.max(1, bytes), writeCombined);
        }
        return new PinnedBuffer(context, address, bytes, writeCombined);
    }

    public CudaContext context() {
        return context;
    }

    public long byteSize() {
        return resource.size;
    }

    /**
     * The host bytes, after waiting for the last transfer through this buffer. Do not hold on to
     * the segment across a later transfer: ask again after queueing one.
     */
    public MemorySegment segment() {
        awaitTransfer();
        return resource.view;
    }

    /** Blocks until the last transfer through this buffer has completed. */
    public void awaitTransfer() {
        synchronized (resource) {
            resource.checkOpen();
            awaitLocked("PinnedBuffer.awaitTransfer");
        }
    }

    /** The state of the last transfer (COMPLETE, UNFENCED or EVENT_RECORDED); does not wait. */
    public String transferState() {
        synchronized (resource) {
            return resource.completion.state().name();
        }
    }

    private void awaitLocked(String operation) {
        if (resource.completion.state() == TransferCompletion.State.COMPLETE) {
            return;
        }
        ContextState contextState = context.state();
        contextState.calls().live(operation);
        int r = resource.completion.await(resource.waitForFence, resource.refence);
        if (r != 0) {
            throw contextState.calls().checked().fail(r,
                    operation + " (waiting for the last transfer through " + resource.identity() + ")");
        }
    }

    void uploadTo(Stream stream, StreamState s, DeviceView destination, long sourceOffset) {
        long n = destination.byteLength();
        synchronized (resource) {
            resource.checkOpen();
            context.state().calls().live(UPLOAD); // the transfer's raw calls do not check for poison
            Ranges.checkRange(sourceOffset, n, resource.size, "upload source", resource);
            context.checkSame(stream.context(), "the stream");
            awaitLocked(UPLOAD);
            synchronized (s.lock()) {
                s.checkOpen();
                destination.useOn(context, s);
                submit(UPLOAD, s, true, destination.address(), hostAt(sourceOffset), n);
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
            Ranges.checkRange(destinationOffset, n, resource.size, "download destination", resource);
            context.checkSame(stream.context(), "the stream");
            awaitLocked(DOWNLOAD);
            synchronized (s.lock()) {
                s.checkOpen();
                source.useOn(context, s);
                submit(DOWNLOAD, s, false, source.address(), hostAt(destinationOffset), n);
            }
            context.state().stats().deviceToHostCopies.increment();
            context.state().stats().deviceToHostBytes.add(n);
        }
    }

    private MemorySegment hostAt(long offset) {
        return offset == 0 ? resource.view : resource.view.asSlice(offset);
    }

    /**
     * Submits one transfer through the buffer's state machine (allocates nothing once the event
     * exists), under the stream's lock: the transfer and its fence record happen with no capture
     * beginning between them.
     */
    private void submit(String operation, StreamState s, boolean upload, long device, MemorySegment host, long bytes) {
        ContextState contextState = context.state();
        if (resource.event == null) {
            resource.event = contextState.events().acquire();
        }
        resource.usedOn(s);
        resource.lastStream = s;
        resource.upload = upload;
        resource.device = device;
        resource.host = host;
        resource.bytes = bytes;
        int r = resource.completion.submit(resource.transfer, resource.record);
        s.submitted();
        if (r != 0) {
            throw contextState.calls().checked().fail(r,
                    resource.completion.transferFailed() ? operation : "cuEventRecord (fence after " + operation + ")");
        }
    }

    @Override
    public void close() {
        synchronized (resource) { // not while a transfer through this buffer is being submitted
            super.close();
        }
    }
}
