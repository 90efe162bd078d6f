package dev.gatun.cuda.internal.memory;

import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.Evidence;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.Retirement;
import dev.gatun.cuda.internal.context.StreamState;
import dev.gatun.cuda.internal.context.TransferCompletion;
import java.lang.foreign.MemorySegment;

/**
 * Page-locked host memory ({@code cuMemHostAlloc}) behind a {@code PinnedBuffer}, with its host
 * view and the state machine of the transfers through it (see {@link TransferCompletion}). Its
 * free waits for the fence of every stream that moved bytes through it, and its view is closed
 * first, so no Java code can reach the memory once it is freed. Everything but the constants is
 * guarded by this object's monitor: a transfer, a wait for one and the close are serialized.
 */
public final class PinnedMemory extends NativeResource {

    private static final String HOST_ALLOC = "cuMemHostAlloc";

    private final long address;
    private final long size;
    private final boolean writeCombined;
    private final HostView view;
    private final TransferCompletion completion = new TransferCompletion();
    /** The buffer's own fence event, taken from the pool at the first transfer. */
    private MemorySegment event;
    private StreamState lastStream;
    // The transfer being submitted, read by the two steps below: they are built once, so a
    // transfer allocates no closure.
    private boolean upload;
    private long device;
    private MemorySegment host;
    private long bytes;

    private final TransferCompletion.Step transfer = () -> upload
            // The host range is inside this pinned memory, which cannot be freed or touched by the
            // host until the fence recorded after it completes; the device range is checked and
            // its allocation lists this stream.
            ? context.calls().memory().tryCopyToDevice(device, host, bytes, lastStream.handle())
            : context.calls().memory().tryCopyToHost(host, device, bytes, lastStream.handle());
    // The buffer's own pooled event, recorded on the transfer's open stream.
    private final TransferCompletion.Step record = () -> context.calls().events().tryRecord(event, lastStream.handle());
    /** Waits for the recorded fence (a host synchronization). */
    private final TransferCompletion.Step waitForFence = () -> {
        context.stats().forcedSynchronizations.increment();
        // The buffer's own event, recorded after its last transfer.
        return context.calls().events().trySynchronize(event);
    };
    /** UNFENCED: only a fence recorded now, on the same stream, follows the transfer. */
    private final TransferCompletion.Step refence = () -> {
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

    private PinnedMemory(ContextState context, long address, long size, boolean writeCombined) {
        super(context, OwnerKind.PINNED_BUFFER);
        this.address = address;
        this.size = size;
        this.writeCombined = writeCombined;
        this.view = new HostView(address, size); // cuMemHostAlloc returned at least `size` bytes there
    }

    /**
     * {@code bytes} of pinned host memory (a 0-byte request still owns one byte, so every buffer
     * has a real allocation); out of memory, after {@code ladder}'s climb.
     */
    public static PinnedMemory allocate(ContextState context, long bytes, boolean writeCombined,
            OutOfMemoryLadder ladder) {
        context.calls().live(HOST_ALLOC);
        long address;
        try {
            address = allocateHost(context, bytes, writeCombined);
        } catch (CudaException e) {
            // Outside the gate's section: the ladder enters it itself, and only where it may.
            address = ladder.retry(e, AllocationKind.PINNED, bytes, () -> allocateHost(context, bytes, writeCombined));
        }
        context.stats().pinnedBytesLive.add(bytes);
        return new PinnedMemory(context, address, bytes, writeCombined);
    }

    private static long allocateHost(ContextState context, long bytes, boolean writeCombined) {
        // Pinned allocation may synchronize: gate it.
        try (var _ = context.enterSection(HOST_ALLOC)) {
            return context.calls().memory().allocateHost(Math.max(1, bytes), writeCombined);
        }
    }

    public long size() {
        return size;
    }

    /** The host bytes (wait for the last transfer before touching them). */
    public MemorySegment view() {
        return view.segment();
    }

    /** The last transfer's state (under this monitor). */
    public TransferCompletion.State state() {
        return completion.state();
    }

    /**
     * Blocks until the last transfer through this memory has completed (under this monitor).
     *
     * @throws dev.gatun.cuda.CudaException when the wait fails; {@code operation} names it
     */
    public void awaitTransfer(String operation) {
        if (completion.state() == TransferCompletion.State.COMPLETE) {
            return;
        }
        context.calls().live(operation);
        int r = completion.await(waitForFence, refence);
        if (r != 0) {
            throw context.calls().checked().fail(r, operation + " (waiting for the last transfer through " + identity() + ")");
        }
    }

    /**
     * Queues one transfer between the host bytes at {@code offset} and {@code deviceAddress} on
     * {@code s}, and its fence (under this monitor and the stream's lock, after
     * {@link #awaitTransfer}): the transfer and its fence record happen with no capture beginning
     * between them. Allocates nothing once the event exists (and the offset is 0).
     *
     * @throws dev.gatun.cuda.CudaException naming the transfer, or the fence after it, whichever failed
     */
    public void submit(String operation, StreamState s, boolean toDevice, long deviceAddress, long offset, long n) {
        if (event == null) {
            event = context.events().acquire();
        }
        usedOn(s);
        lastStream = s;
        upload = toDevice;
        device = deviceAddress;
        host = offset == 0 ? view.segment() : view.segment().asSlice(offset);
        bytes = n;
        int r = completion.submit(transfer, record);
        s.submitted();
        if (r != 0) {
            throw context.calls().checked().fail(r,
                    completion.transferFailed() ? operation : "cuEventRecord (fence after " + operation + ")");
        }
    }

    /** {@return the host address of the first byte} Ranges inside it are checked by the caller. */
    public long address() {
        return address;
    }

    /**
     * The first half of this memory's part in a batch of copies that the caller queues on
     * {@code s} in its own driver call (under this monitor, after {@link #awaitTransfer}, and
     * under the stream's lock): lists the stream and marks the transfer UNFENCED before the call.
     * Follow it with {@link #fenceBatch()} whatever the call did.
     */
    public void beginBatch(StreamState s) {
        if (event == null) {
            event = context.events().acquire();
        }
        usedOn(s);
        lastStream = s;
        completion.begin();
    }

    /** Records this memory's fence after the batch the caller queued; the first record's result (0: fenced). */
    public int fenceBatch() {
        return completion.fence(record);
    }

    @Override
    protected void beforeRetire() {
        view.close();
    }

    @Override
    protected Retirement.Release howToFree() {
        return view.release(this::freeHost);
    }

    /** Frees the host memory once the fences of every stream that moved bytes through it completed (or the device was synchronized). */
    private int freeHost() {
        int r = context.calls().memory().freeHost(address);
        if (r == 0) {
            context.stats().pinnedBytesLive.add(-size);
            if (event != null) {
                context.events().release(event);
                event = null;
            }
        }
        return r;
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
