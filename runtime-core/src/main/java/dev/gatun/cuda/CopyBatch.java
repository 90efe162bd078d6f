package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.StreamState;
import dev.gatun.cuda.internal.memory.PinnedMemory;
import dev.gatun.cuda.internal.transfer.BatchOverlaps;
import dev.gatun.cuda.internal.transfer.BatchSubmission;
import dev.gatun.cuda.internal.transfer.Ranges;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * Many small copies queued on a stream in one driver call ({@code cuMemcpyBatchAsync}): uploads
 * from and downloads into {@link PinnedBuffer}s, and copies between device ranges of one
 * context. Fill it with {@link #upload}, {@link #download} and {@link #copy}, then
 * {@link #submit(Stream)} it; it empties then and can be filled again. Its native arrays are
 * allocated once, for its capacity, and refilled in place: adding a copy and submitting allocate
 * nothing.
 *
 * <pre>{@code
 * try (CopyBatch batch = CopyBatch.create(64)) {
 *     for (int b = 0; b < blocks; b++) {
 *         batch.upload(cache.bytes().slice(slot[b] * BLOCK, BLOCK), staging, b * BLOCK);
 *     }
 *     batch.submit(stream);
 * }
 * }</pre>
 *
 * <p><b>Which path runs.</b> Where the driver has the CUDA 13.0 entry point
 * ({@code cuMemcpyBatchAsync_v2}: drivers for CUDA 13.0 and newer), the whole batch is one call.
 * Elsewhere (CUDA 12.x drivers, including 12.8 and 12.9, whose older entry point Gatun's CUDA
 * 13.0 bindings do not declare) each copy is one {@code cuMemcpyAsync}, in the order added.
 * {@link #create(int, Submission)} can ask for that path on any driver. The counters
 * {@link #batchedSubmissions()} and {@link #oneAtATimeSubmissions()} say which ran.
 *
 * <p><b>Ordering.</b> The batch as a whole runs in stream order, after the work queued before it
 * and before the work queued after it; the copies inside it run in no particular order, so no
 * copy may read or write bytes that another copy of the same batch writes (the driver leaves
 * the result undefined). {@link #submit} refuses such a batch, on either path, before any driver
 * call: two uploads into the same device bytes, two downloads into the same pinned bytes, a copy
 * that reads bytes another copy writes. Ranges that only touch (one ends where the next begins)
 * are fine. The check sorts the copies' ranges, O(n log n) on the host with arrays the batch
 * allocated once, and allocates nothing: 1 to 2 µs of CPU for 64 copies, a few percent of such a
 * batch's submission (about 56 µs on an H200).
 * Each source is read in stream order.
 *
 * <p><b>Host memory.</b> Only {@link PinnedBuffer}s: Gatun fences each one (its host bytes are
 * unusable until the batch completes, as after {@link Stream#upload(DeviceView, PinnedBuffer, long)}),
 * and orders the batch after its previous transfer on the GPU, as a single transfer does: the
 * host does not wait for it. Pageable host memory is refused by
 * design, although the driver would take it: Gatun cannot keep a caller's segment alive, nor
 * unread, until the copy completes. To upload from any segment, the Java heap included, use
 * {@link Stream#upload(DeviceView, java.lang.foreign.MemorySegment)}, which stages.
 *
 * <p><b>Captures.</b> The driver has no graph node for a batch: {@link #submit} on a stream that
 * is capturing is refused with a {@link CaptureActiveException} before anything is queued.
 *
 * <p>Not thread-safe: fill and submit a batch from one thread at a time. Ranges are checked when
 * a copy is added; that the owners are open, when the batch is submitted.
 */
public final class CopyBatch implements AutoCloseable {

    /** How a batch reaches the driver. */
    public enum Submission {
        /** One {@code cuMemcpyBatchAsync} where the driver has it, otherwise one copy at a time. */
        BATCHED,
        /** One {@code cuMemcpyAsync} per copy, on any driver. */
        ONE_AT_A_TIME
    }

    private static final String SUBMIT = "CopyBatch.submit";

    private final int capacity;
    private final Submission submission;
    private final BatchSubmission arrays;
    private final BatchOverlaps overlaps;
    /**
     * Per copy: its device range (the destination of a device copy), a device copy's source
     * (else null), and its pinned memory (null for a device copy).
     */
    private final DeviceView[] device;
    private final DeviceView[] deviceSource;
    private final PinnedMemory[] host;
    /** The distinct pinned memories of the copies added, in the order first added (sorted by id at submit). */
    private final PinnedMemory[] pinned;
    private CudaContext context;
    private int count;
    private int pinnedCount;
    private long uploadBytes;
    private long downloadBytes;
    private long deviceBytes;
    private int uploads;
    private int downloads;
    private long batched;
    private long oneAtATime;
    private boolean closed;

    private CopyBatch(int capacity, Submission submission) {
        this.capacity = capacity;
        this.submission = submission;
        this.arrays = new BatchSubmission(capacity);
        this.overlaps = new BatchOverlaps(capacity);
        this.device = new DeviceView[capacity];
        this.deviceSource = new DeviceView[capacity];
        this.host = new PinnedMemory[capacity];
        this.pinned = new PinnedMemory[capacity];
    }

    /**
     * A batch of up to {@code capacity} copies, submitted in one driver call where the driver can.
     *
     * @param capacity the most copies one submission holds; 1 or more
     * @return the batch, to close when done (it frees its native arrays)
     */
    public static CopyBatch create(int capacity) {
        return create(capacity, Submission.BATCHED);
    }

    /**
     * A batch of up to {@code capacity} copies, submitted as {@code submission} says.
     *
     * @param capacity the most copies one submission holds; 1 or more
     * @param submission {@link Submission#BATCHED}, or {@link Submission#ONE_AT_A_TIME} to queue
     *     each copy on its own on any driver (to compare, or to set a driver's batch path aside)
     * @return the batch, to close when done (it frees its native arrays)
     */
    public static CopyBatch create(int capacity, Submission submission) {
        Objects.requireNonNull(submission, "submission");
        if (capacity < 1) {
            throw new IllegalArgumentException("a batch holds at least 1 copy; capacity " + capacity);
        }
        return new CopyBatch(capacity, submission);
    }

    /** {@return the most copies one submission holds} */
    public int capacity() {
        return capacity;
    }

    /** {@return the copies added since the last submission} */
    public int size() {
        return count;
    }

    /** {@return how many submissions went to the driver as one {@code cuMemcpyBatchAsync}} */
    public long batchedSubmissions() {
        return batched;
    }

    /** {@return how many submissions went to the driver one {@code cuMemcpyAsync} per copy} */
    public long oneAtATimeSubmissions() {
        return oneAtATime;
    }

    /**
     * Adds a copy of {@code destination.byteSize()} bytes from {@code source} at
     * {@code sourceOffset} to the device. A 0-byte copy is not added.
     *
     * @param destination where the bytes go on the device
     * @param source the pinned buffer they come from
     * @param sourceOffset where in {@code source} they start, in bytes
     * @return this batch
     * @throws IndexOutOfBoundsException when the range leaves {@code source}
     * @throws IllegalArgumentException when the owners belong to another context than the batch's copies
     * @throws IllegalStateException when the batch is full or closed
     */
    public CopyBatch upload(DeviceView destination, PinnedBuffer source, long sourceOffset) {
        long n = destination.byteSize();
        PinnedMemory memory = source.memory();
        Ranges.checkRange(sourceOffset, n, memory.size(), "batch upload source", memory);
        if (n > 0) {
            add(destination, null, source, memory, BatchOverlaps.DEVICE, destination.address(), BatchOverlaps.HOST,
                    memory.address() + sourceOffset, n);
            uploads++;
            uploadBytes += n;
        }
        return this;
    }

    /**
     * Adds a copy of {@code source} from the device into {@code destination} at
     * {@code destinationOffset}. A 0-byte copy is not added.
     *
     * @param destination the pinned buffer the bytes go to
     * @param destinationOffset where in {@code destination} they go, in bytes
     * @param source where they come from on the device
     * @return this batch
     * @throws IndexOutOfBoundsException when the range leaves {@code destination}
     * @throws IllegalArgumentException when the owners belong to another context than the batch's copies
     * @throws IllegalStateException when the batch is full or closed
     */
    public CopyBatch download(PinnedBuffer destination, long destinationOffset, DeviceView source) {
        long n = source.byteSize();
        PinnedMemory memory = destination.memory();
        Ranges.checkRange(destinationOffset, n, memory.size(), "batch download destination", memory);
        if (n > 0) {
            add(source, null, destination, memory, BatchOverlaps.HOST, memory.address() + destinationOffset,
                    BatchOverlaps.DEVICE, source.address(), n);
            downloads++;
            downloadBytes += n;
        }
        return this;
    }

    /**
     * Adds a device-to-device copy within one context; both views must have the same byte length.
     * A 0-byte copy is not added. (A copy between devices is {@link Stream#copy}.)
     *
     * @param destination where the bytes go
     * @param source where they come from
     * @return this batch
     * @throws IllegalArgumentException when the lengths differ, or the views belong to another
     *     context than the batch's copies
     * @throws IllegalStateException when the batch is full or closed
     */
    public CopyBatch copy(DeviceView destination, DeviceView source) {
        long n = Ranges.sameLength(destination.byteSize(), source.byteSize());
        if (n > 0) {
            add(destination, source, null, null, BatchOverlaps.DEVICE, destination.address(), BatchOverlaps.DEVICE,
                    source.address(), n);
            deviceBytes += n;
        }
        return this;
    }

    private void add(DeviceView view, DeviceView otherView, PinnedBuffer buffer, PinnedMemory memory, int toSpace,
            long to, int fromSpace, long from, long n) {
        checkOpen();
        if (count == capacity) {
            throw new IllegalStateException("the batch holds " + capacity + " copies already; submit it first, or "
                    + "create it with a larger capacity");
        }
        CudaContext c = context != null ? context : view.buffer().context();
        c.checkSame(view.buffer().context(), "the device view");
        if (otherView != null) {
            c.checkSame(otherView.buffer().context(), "the source view");
        }
        if (buffer != null) {
            c.checkSame(buffer.context(), "the pinned buffer");
            addPinned(memory);
        }
        context = c;
        device[count] = view;
        deviceSource[count] = otherView;
        host[count] = memory;
        arrays.set(count, to, from, n);
        overlaps.set(count, toSpace, to, fromSpace, from, n);
        count++;
    }

    private void addPinned(PinnedMemory memory) {
        for (int i = 0; i < pinnedCount; i++) {
            if (pinned[i] == memory) {
                return;
            }
        }
        pinned[pinnedCount++] = memory;
    }

    /**
     * Queues the copies added so far on {@code stream}, as one batch, and empties this batch.
     * Does nothing when it is empty. The batch runs after the last transfer through each pinned
     * buffer of the batch and after the graph launches that copy to or from one, ordered on the
     * GPU as a pinned upload or download is (the host does not wait); each is then fenced after
     * the batch.
     *
     * <p>When the driver fails the call, the copies are dropped from this batch all the same
     * (some may have been queued), and the pinned buffers are fenced.
     *
     * @param stream a stream of the context of the batch's copies
     * @throws CaptureActiveException when the stream is capturing a graph: the driver has no graph
     *     node for a batch of copies (queue them before or after the capture, or capture each copy
     *     on its own with {@link Stream#copy} and the pinned transfers)
     * @throws IllegalStateException when the batch, the stream or an owner of a copy is closed
     *     (nothing is queued, and the batch keeps its copies)
     * @throws IllegalArgumentException when two copies overlap: one writes bytes the other writes
     *     or reads; the message names both and the bytes (nothing is queued, and the batch keeps
     *     its copies: {@link #clear()} drops them)
     */
    public void submit(Stream stream) {
        checkOpen();
        StreamState s = stream.openState();
        if (count == 0) {
            return;
        }
        context.checkSame(stream.context(), "the stream");
        if (overlaps.findConflict(count)) {
            throw new IllegalArgumentException(conflict());
        }
        ContextState state = context.state();
        state.calls().batchCopies().live();
        sortPinned();
        boolean driverBatch = submission == Submission.BATCHED && state.calls().batchCopies().batched();
        lockPinnedAndQueue(0, stream, s, state, driverBatch);
    }

    /** The conflict the overlap check found, in words: which copies, which bytes, what to do. */
    private String conflict() {
        boolean inOrder = overlaps.first() < overlaps.second();
        int a = inOrder ? overlaps.first() : overlaps.second();
        int b = inOrder ? overlaps.second() : overlaps.first();
        boolean aWrites = inOrder ? overlaps.firstWrites() : overlaps.secondWrites();
        boolean bWrites = inOrder ? overlaps.secondWrites() : overlaps.firstWrites();
        return "copies " + a + " and " + b + " of this batch (numbered from 0 in the order added) overlap on "
                + (overlaps.space() == BatchOverlaps.DEVICE ? "device" : "pinned host") + " bytes [0x"
                + Long.toHexString(overlaps.overlapStart()) + ", 0x" + Long.toHexString(overlaps.overlapEnd()) + "): copy "
                + a + " (" + describe(a) + ") " + (aWrites ? "writes" : "reads") + " them and copy " + b + " ("
                + describe(b) + ") " + (bWrites ? "writes" : "reads") + " them. The driver runs a batch's copies in no "
                + "particular order, so the result would be undefined; nothing was queued and the batch keeps its "
                + "copies. Fix the ranges, or submit the two copies in separate batches (clear() drops the copies added)";
    }

    /** Copy {@code k} (by the order added), in words with its owners. */
    private String describe(int k) {
        if (host[k] == null) {
            return "a device copy from " + deviceSource[k].buffer() + " into " + device[k].buffer();
        }
        return overlaps.destinationSpace(k) == BatchOverlaps.DEVICE ? "an upload from " + host[k] + " into "
                + device[k].buffer() : "a download from " + device[k].buffer() + " into " + host[k];
    }

    /** Orders the pinned memories by id: every batch takes their transfer locks in one global order, so two batches never deadlock. */
    private void sortPinned() {
        for (int i = 1; i < pinnedCount; i++) {
            PinnedMemory m = pinned[i];
            int j = i - 1;
            while (j >= 0 && pinned[j].id() > m.id()) {
                pinned[j + 1] = pinned[j];
                j--;
            }
            pinned[j + 1] = m;
        }
    }

    /**
     * Holds the transfer lock of pinned memory {@code i} and of every later one (each prepared to
     * follow its last transfer on the GPU), then queues after the graph launches that hold any of
     * them.
     */
    private void lockPinnedAndQueue(int i, Stream stream, StreamState s, ContextState state, boolean driverBatch) {
        if (i < pinnedCount) {
            PinnedMemory m = pinned[i];
            synchronized (m.transferLock()) {
                m.checkOpen();
                m.prepareTransfer(SUBMIT, s);
                lockPinnedAndQueue(i + 1, stream, s, state, driverBatch);
            }
            return;
        }
        // Out of the stream's lock: ordering after other streams takes their locks.
        MemorySegment relay = PinnedMemory.relayAfterLaunches(pinned, pinnedCount, s);
        try {
            queue(stream, s, state, relay, driverBatch);
        } finally {
            if (relay != null) {
                state.events().release(relay); // the wait on it is queued, or nothing is
            }
        }
    }

    private void queue(Stream stream, StreamState s, ContextState state, MemorySegment relay, boolean driverBatch) {
        synchronized (s.lock()) { // no capture begins between the check and the batch with its fences
            s.checkOpen();
            if (s.queuesIntoCapture()) {
                throw new CaptureActiveException(stream + " is capturing a graph; the driver has no graph node for a "
                        + "batch of copies. Submit the batch before or after the capture, or capture the copies one "
                        + "by one (Stream.copy, Stream.upload, Stream.download).");
            }
            for (int k = 0; k < count; k++) {
                device[k].useOn(context, s);
                if (deviceSource[k] != null) {
                    deviceSource[k].useOn(context, s);
                }
            }
            if (relay != null) {
                // A pooled event recorded on this context's synchronous stream; s is open, not
                // capturing, and its lock is held.
                state.calls().streams().waitEvent(s.handle(), relay);
            }
            // Every device range is checked and inside an open allocation of this context that now
            // lists this stream; every host range is checked and inside pinned memory that is open
            // (its transfer lock held), ordered after its last transfer and fenced after the batch.
            try {
                arrays.queue(state, s, count, pinned, pinnedCount, driverBatch);
            } finally {
                recordQueued(state, driverBatch);
            }
        }
    }

    /** Counts the submission and its copies, and empties the batch. */
    private void recordQueued(ContextState state, boolean driverBatch) {
        if (driverBatch) {
            batched++;
        } else {
            oneAtATime++;
        }
        state.stats().hostToDeviceCopies.add(uploads);
        state.stats().hostToDeviceBytes.add(uploadBytes);
        state.stats().deviceToHostCopies.add(downloads);
        state.stats().deviceToHostBytes.add(downloadBytes);
        state.stats().deviceToDeviceCopies.add(count - uploads - downloads);
        state.stats().deviceToDeviceBytes.add(deviceBytes);
        clear();
    }

    /** Drops the copies added since the last submission, without queueing them. */
    public void clear() {
        for (int i = 0; i < count; i++) {
            device[i] = null;
            deviceSource[i] = null;
            host[i] = null;
        }
        for (int i = 0; i < pinnedCount; i++) {
            pinned[i] = null;
        }
        count = 0;
        pinnedCount = 0;
        uploads = 0;
        downloads = 0;
        uploadBytes = 0;
        downloadBytes = 0;
        deviceBytes = 0;
        context = null;
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("this copy batch is closed; create another");
        }
    }

    /** Frees the native arrays. Idempotent. The copies already submitted are unaffected. */
    @Override
    public void close() {
        if (!closed) {
            closed = true;
            clear();
            arrays.close();
        }
    }
}
