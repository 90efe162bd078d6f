package dev.gatun.cuda.internal.memory;

import dev.gatun.cuda.CaptureActiveException;
import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.TransferState;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.context.CaptureScope;
import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.Evidence;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.Retirement;
import dev.gatun.cuda.internal.context.StreamState;
import dev.gatun.cuda.internal.context.TouchedByLaunches;
import dev.gatun.cuda.internal.context.TransferCompletion;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Page-locked host memory ({@code cuMemHostAlloc}) behind a {@code PinnedBuffer}, with its host
 * view and what its host bytes wait for. Its free waits for the fence of every stream that moved
 * bytes through it, and its view is closed first, so no Java code can reach the memory once it is
 * freed.
 *
 * <p>Two kinds of GPU work touch the bytes, and are tracked apart:
 * <ul>
 *   <li>Transfers queued on a stream ({@code Stream.upload}, {@code Stream.download}, a copy
 *       batch): the state machine of {@link TransferCompletion} follows the last one, fenced by
 *       this memory's own event. Host access waits for that fence; a new transfer does not: it is
 *       ordered after the last one on the GPU ({@link #prepareTransfer}, then
 *       {@link #followLastTransfer}), by stream order on the last one's stream and by a wait on
 *       the fence on another stream, so that a pipeline through one buffer (upload, kernel,
 *       download back into it) never stalls the host. The new transfer's fence, recorded after
 *       that wait, then covers every earlier transfer, on whichever stream.
 *   <li>Copy nodes of graphs (a transfer captured on a stream, or a node added by hand): they run
 *       at each launch of an executable, so nothing is recorded for them when they are captured
 *       (an event recorded inside a capture is a point of the graph, which no one can wait for
 *       once the capture ended). Every executable that holds this memory says so through its
 *       holds ({@link TouchedByLaunches}). Host access then orders the context's synchronous
 *       stream after the streams those executables were launched on and waits for an event
 *       recorded there ({@link dev.gatun.cuda.internal.context.SyncOrdering#relayAfter}); a
 *       transfer queued on a stream first makes that stream wait for such an event when one of
 *       them was launched on another stream (on the same stream, stream order suffices).
 * </ul>
 *
 * <p>Everything but the constants and the executables is guarded by the {@linkplain
 * #transferLock() transfer lock}: a transfer, a wait for one and the close are serialized. It is
 * not this object's monitor, which {@link NativeResource#hold()} takes when an executable is made
 * or updated under the executable's lock (which a launch takes under a stream's lock): a host
 * access that waits for a stream's lock under the transfer lock never blocks that update.
 */
public final class PinnedMemory extends NativeResource implements TouchedByLaunches {

    private static final String HOST_ALLOC = "cuMemHostAlloc";

    private final long address;
    private final long size;
    private final boolean writeCombined;
    private final HostView view;
    private final Object transferLock = new Object();
    private final TransferCompletion completion = new TransferCompletion();
    /** The executables that hold this memory, whose launches may touch it; copy-on-write, so a transfer reads it without a lock. */
    private final List<NativeResource> launchers = new CopyOnWriteArrayList<>();
    /** The buffer's own fence event, taken from the pool at the first transfer. */
    private MemorySegment event;
    /** The stream of the last transfer queued outside a capture: the one its fence was (or is to be) recorded on. */
    private StreamState lastStream;
    // The transfer being submitted, read by the transfer step below: built once, so a transfer
    // allocates no closure.
    private StreamState stream;
    private boolean upload;
    private long device;
    private MemorySegment host;
    private long bytes;

    private final TransferCompletion.Step transfer = () -> upload
            // The host range is inside this pinned memory, which cannot be freed or touched by the
            // host until the fence recorded after it completes (captured: until the launches of
            // every executable that holds it completed); the device range is checked and its
            // allocation lists this stream.
            ? context.calls().memory().tryCopyToDevice(device, host, bytes, stream.handle())
            : context.calls().memory().tryCopyToHost(host, device, bytes, stream.handle());
    // The buffer's own pooled event, recorded on the transfer's open, non-capturing stream.
    private final TransferCompletion.Step record = () -> context.calls().events().tryRecord(event, lastStream.handle());
    /** Waits for the recorded fence (a host synchronization). */
    private final TransferCompletion.Step waitForFence = () -> {
        context.stats().forcedSynchronizations.increment();
        // The buffer's own event, recorded after its last transfer outside any capture.
        return context.calls().events().trySynchronize(event);
    };
    /** UNFENCED: only a fence recorded now, on the same stream, follows the transfer. */
    private final TransferCompletion.Step refence = () -> {
        StreamState last = lastStream;
        synchronized (last.lock()) {
            if (last.closed()) { // its final fence follows the transfer
                return last.drained() ? 0 : Evidence.PENDING;
            }
            if (last.queuesIntoCapture()) {
                return CudaDriver.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED();
            }
            // Own event, open non-capturing stream of this context.
            return context.calls().events().tryRecord(event, last.handle());
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

    /** The lock that serializes the transfers through this memory, the waits for them and its close. */
    public Object transferLock() {
        return transferLock;
    }

    /** The last transfer's state (under the transfer lock); graph launches are not part of it. */
    public TransferState state() {
        return completion.state();
    }

    /**
     * For host access to the bytes (under the transfer lock, with no stream's lock held): blocks
     * until the last transfer through this memory has completed, and the launches queued so far
     * of every executable that holds it.
     *
     * @throws dev.gatun.cuda.CudaException when a wait fails; {@code operation} names it
     */
    public void awaitTransfer(String operation) {
        awaitLastTransfer(operation);
        if (launchers.isEmpty()) {
            return;
        }
        List<StreamState> streams = launchStreams(null, null);
        if (streams == null) {
            return; // held, never launched
        }
        context.calls().live(operation);
        MemorySegment relay = context.ordering().relayAfter(streams);
        try {
            context.stats().forcedSynchronizations.increment();
            // A pooled event of this context, recorded on its synchronous stream after waits for
            // every stream an executable holding this memory was launched on.
            int r = context.calls().events().trySynchronize(relay);
            if (r != 0) {
                throw context.calls().checked().fail(r, operation + " (waiting for the graph launches that copy to or "
                        + "from " + identity() + ")");
            }
        } finally {
            context.events().release(relay);
        }
    }

    /**
     * Blocks until the last transfer queued on a stream through this memory has completed (under
     * the transfer lock, with no stream's lock held): for host access, and before a transfer
     * captured into a graph ({@link #awaitsOnHostBefore}). A transfer queued to run is ordered
     * after the last one on the GPU instead ({@link #prepareTransfer}).
     *
     * @throws dev.gatun.cuda.CudaException when the wait fails; {@code operation} names it
     */
    public void awaitLastTransfer(String operation) {
        if (completion.state() == TransferState.COMPLETE) {
            return;
        }
        context.calls().live(operation);
        int r = completion.await(waitForFence, refence);
        if (r != 0) {
            throw context.calls().checked().fail(r, operation + " (waiting for the last transfer through " + identity() + ")");
        }
    }

    /**
     * The first step of ordering a transfer through this memory on {@code s} after the last one,
     * without the host waiting (under the transfer lock, with no stream's lock held: it may take
     * the last transfer's stream's): when that transfer's fence could not be recorded and it went
     * on another stream, records a fresh fence there now, for {@code s} to wait on. Nothing
     * otherwise, and no driver call.
     *
     * @throws dev.gatun.cuda.CudaException when the fresh fence cannot be recorded (nothing is
     *     queued; the state stays UNFENCED)
     */
    public void prepareTransfer(String operation, StreamState s) {
        int r = completion.prepareNext(lastStream == s, refence);
        if (r != 0) {
            throw context.calls().checked().fail(r, "cuEventRecord (fencing the last transfer through " + identity()
                    + " on " + lastStream + ", for " + operation + " on " + s + " to follow)");
        }
    }

    /**
     * Whether a transfer through this memory that goes into {@code capture} (the capture of the
     * next work on its stream, read under the stream's lock) must wait on the host for the last
     * transfer first ({@link #awaitLastTransfer}, out of the stream's lock). It becomes a copy
     * node, which runs at each launch of its graph, on whichever stream: nothing on the GPU orders
     * that after the last transfer, so the last transfer must be complete before the node exists.
     * A foreign capture is refused by {@link #submit} before any wait.
     */
    public boolean awaitsOnHostBefore(CaptureScope capture) {
        return capture != null && capture != CaptureScope.FOREIGN
                && completion.state() != TransferState.COMPLETE;
    }

    /**
     * The second step, just before a transfer through this memory is queued on {@code s} (under
     * the transfer lock and the stream's lock; {@code s} open and not capturing; after
     * {@link #prepareTransfer}): makes {@code s} wait on the GPU for the last transfer's fence when
     * that transfer went on another stream and is not known complete. On the same stream, stream
     * order suffices: no driver call.
     *
     * <p>The fence event is recorded again after the new transfer; the wait queued here is not
     * affected: "Other APIs such as cuStreamWaitEvent() use the most recently captured state at
     * the time of the API call, and are not affected by later calls to cuEventRecord()" (cuda.h,
     * cuEventRecord). So one event per buffer suffices, however many streams take turns.
     *
     * @throws dev.gatun.cuda.CudaException when the wait cannot be queued (nothing else is)
     */
    public void followLastTransfer(StreamState s) {
        if (completion.nextWaitsForFence(lastStream == s)) {
            // Listed first (the transfer lists it anyway): the memory is freed, and its event goes
            // back to the pool, only after a fence on s, which follows this wait.
            usedOn(s);
            // The buffer's own event, last recorded outside any capture (captured transfers record
            // none); s is open, not capturing, its lock held.
            context.calls().streams().waitEvent(s.handle(), event);
        }
    }

    /**
     * Before a transfer through this memory on {@code s} (under the transfer lock, with no
     * stream's lock held): an event recorded on the context's synchronous stream after the
     * launches queued so far on other streams by every executable that holds this memory, for
     * {@link #submit} to make {@code s} wait on; the caller then gives it back to the pool
     * ({@code EventPool.release}). Null, with nothing recorded, when no executable holding it was
     * launched on another stream: one volatile read when none holds it.
     */
    public MemorySegment relayAfterLaunches(StreamState s) {
        if (launchers.isEmpty()) {
            return null;
        }
        List<StreamState> others = launchStreams(s, null);
        return others == null ? null : context.ordering().relayAfter(others);
    }

    /**
     * {@link #relayAfterLaunches} for the first {@code count} of {@code memories} at once (the
     * pinned memories of a batch of copies, all of {@code s}'s context): one event, after the
     * launch streams of all of them; null when none.
     */
    public static MemorySegment relayAfterLaunches(PinnedMemory[] memories, int count, StreamState s) {
        List<StreamState> others = null;
        for (int i = 0; i < count; i++) {
            if (!memories[i].launchers.isEmpty()) {
                others = memories[i].launchStreams(s, others);
            }
        }
        return others == null ? null : s.context().ordering().relayAfter(others);
    }

    /** Adds to {@code into} (null: none yet) the streams the executables holding this memory were launched on, other than {@code except}. */
    private List<StreamState> launchStreams(StreamState except, List<StreamState> into) {
        List<StreamState> streams = into;
        for (NativeResource executable : launchers) {
            streams = executable.streamsUsedBesides(except, streams);
        }
        return streams;
    }

    @Override
    public void heldBy(NativeResource executable) {
        launchers.add(executable);
    }

    @Override
    public void releasedBy(NativeResource executable) {
        launchers.remove(executable);
    }

    /**
     * Queues one transfer between the host bytes at {@code offset} and {@code deviceAddress} on
     * {@code s} (under the transfer lock and the stream's lock, after {@link #prepareTransfer}),
     * after a wait on {@code relay} when it is not null ({@link #relayAfterLaunches}) and the
     * ordering after the last transfer ({@link #followLastTransfer}), then its fence: the transfer
     * and its fence record happen with no capture beginning between them. Same stream as the last
     * transfer: the copy and one record, as when the last one is complete. Allocates nothing once
     * the event exists (and the offset is 0).
     *
     * <p>On a stream capturing for Gatun ({@code capture}, read under the stream's lock; the last
     * transfer complete: {@link #awaitsOnHostBefore}), the transfer becomes a copy node of the
     * graph instead: the capture holds this memory (and so do its graph and every executable made
     * from it), no fence is recorded and the last transfer's state is left as it is. A capture
     * Gatun did not begin is refused: nothing would hold this memory for its graph, nor order host
     * access after the graph's launches.
     *
     * @throws dev.gatun.cuda.CudaException naming the transfer, or the fence after it, whichever
     *     failed (or a wait before it, when nothing was queued)
     * @throws CaptureActiveException on a stream capturing for another library, before any driver call
     */
    public void submit(String operation, StreamState s, CaptureScope capture, MemorySegment relay, boolean toDevice,
            long deviceAddress, long offset, long n) {
        if (capture != null) {
            submitCaptured(operation, s, capture, toDevice, deviceAddress, offset, n);
            return;
        }
        if (relay != null) {
            // A pooled event recorded on this context's synchronous stream; s is open, not
            // capturing, and its lock is held.
            context.calls().streams().waitEvent(s.handle(), relay);
        }
        followLastTransfer(s);
        if (event == null) {
            event = context.events().acquire();
        }
        usedOn(s);
        lastStream = s;
        stage(s, toDevice, deviceAddress, offset, n);
        int r = completion.submit(transfer, record);
        s.submitted();
        if (r != 0) {
            throw context.calls().checked().fail(r,
                    completion.transferFailed() ? operation : "cuEventRecord (fence after " + operation + ")");
        }
    }

    private void submitCaptured(String operation, StreamState s, CaptureScope capture, boolean toDevice,
            long deviceAddress, long offset, long n) {
        if (capture == CaptureScope.FOREIGN) {
            throw new CaptureActiveException(operation + " through " + identity() + " on " + s + ", which is capturing "
                    + "a graph that Gatun did not begin (through its raw handle): nothing would hold the buffer for that "
                    + "graph, nor make its host access wait for the graph's launches. Capture with Stream.beginCapture, "
                    + "or transfer before or after the capture");
        }
        usedOn(s); // the capture holds it; its graph and every executable made from it take the hold over
        stage(s, toDevice, deviceAddress, offset, n);
        int r = transfer.run();
        s.submitted();
        if (r != 0) {
            throw context.calls().checked().fail(r, operation + " (captured on " + s + ")");
        }
    }

    /** Sets what the transfer step reads. */
    private void stage(StreamState s, boolean toDevice, long deviceAddress, long offset, long n) {
        stream = s;
        upload = toDevice;
        device = deviceAddress;
        host = offset == 0 ? view.segment() : view.segment().asSlice(offset);
        bytes = n;
    }

    /** {@return the host address of the first byte} Ranges inside it are checked by the caller. */
    public long address() {
        return address;
    }

    /**
     * The first half of this memory's part in a batch of copies that the caller queues on
     * {@code s} in its own driver call (under the transfer lock, after {@link #prepareTransfer},
     * and under the stream's lock, after {@link #followLastTransfer}): lists the stream and marks
     * the transfer UNFENCED before the call. Follow it with {@link #fenceBatch()} whatever the
     * call did.
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
