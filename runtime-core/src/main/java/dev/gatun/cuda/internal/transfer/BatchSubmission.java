package dev.gatun.cuda.internal.transfer;

import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.StreamState;
import dev.gatun.cuda.internal.driver.BatchCopyCalls;
import dev.gatun.cuda.internal.memory.PinnedMemory;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The native side of a batch of copies: the three arrays {@code cuMemcpyBatchAsync} reads
 * (destinations, sources, sizes), allocated once for the batch's capacity and refilled in
 * place, its one attribute, and the queueing of the batch with the fences of the pinned memory
 * it moves bytes through. Not thread-safe: its batch serializes access.
 *
 * <p>One attribute applies to every copy ({@link BatchCopyCalls#streamOrderedAttributes}).
 */
public final class BatchSubmission implements AutoCloseable {

    private static final String BATCH = "cuMemcpyBatchAsync";
    private static final String COPY = "cuMemcpyAsync";

    private final Arena arena = Arena.ofShared();
    private final MemorySegment destinations;
    private final MemorySegment sources;
    private final MemorySegment sizes;
    private final MemorySegment attributes;
    private final MemorySegment attributeStarts;

    /** Arrays for up to {@code capacity} copies (at least 1). */
    public BatchSubmission(int capacity) {
        destinations = arena.allocate(ValueLayout.JAVA_LONG, capacity);
        sources = arena.allocate(ValueLayout.JAVA_LONG, capacity);
        sizes = arena.allocate(ValueLayout.JAVA_LONG, capacity);
        attributes = BatchCopyCalls.streamOrderedAttributes(arena);
        attributeStarts = arena.allocate(ValueLayout.JAVA_LONG); // 0: the attribute applies from the first copy on
    }

    /** Sets copy {@code i} (its ranges checked by the caller). */
    public void set(int i, long destination, long source, long bytes) {
        destinations.setAtIndex(ValueLayout.JAVA_LONG, i, destination);
        sources.setAtIndex(ValueLayout.JAVA_LONG, i, source);
        sizes.setAtIndex(ValueLayout.JAVA_LONG, i, bytes);
    }

    /**
     * Queues the first {@code count} copies on {@code s}, after the last transfer through each of
     * {@code pinned} (on the GPU: {@link PinnedMemory#followLastTransfer}), then fences each of
     * them (under the transfer lock of each, prepared with {@link PinnedMemory#prepareTransfer},
     * and under the stream's lock, after every device range was listed on the stream: no capture
     * begins between the copies and their fences). The stream is marked as having queued work
     * whatever the copy call did; a wait that fails before it leaves every transfer state as it
     * was.
     *
     * @param batched one {@code cuMemcpyBatchAsync} (the caller checked that the driver has it),
     *     or one {@code cuMemcpyAsync} per copy, stopping at the first that fails
     * @throws dev.gatun.cuda.CudaException naming the copy call when it failed, else the fence
     *     record after it; a throwable from a fence never replaces the copy's own
     */
    public void queue(ContextState context, StreamState s, int count, PinnedMemory[] pinned, int pinnedCount,
            boolean batched) {
        for (int i = 0; i < pinnedCount; i++) {
            pinned[i].followLastTransfer(s); // every wait before any state changes: a failed one leaves them all as they were
        }
        for (int i = 0; i < pinnedCount; i++) {
            pinned[i].beginBatch(s);
        }
        BatchCopyCalls calls = context.calls().batchCopies();
        int copied;
        try {
            copied = batched
                    // Safety: the arrays hold count entries each and live as long as this object,
                    // which the calling batch keeps for the call; the ranges are checked inside
                    // open allocations listed on s, or inside pinned memory fenced below.
                    ? calls.tryBatch(destinations, sources, sizes, count, attributes, attributeStarts, 1, s.handle())
                    : oneAtATime(calls, s, count);
        } catch (RuntimeException | Error thrown) {
            try {
                fence(pinned, pinnedCount);
            } catch (RuntimeException | Error cleanup) {
                thrown.addSuppressed(cleanup);
            }
            throw thrown;
        } finally {
            s.submitted(); // a failed batch may have queued some of its copies
        }
        int fenced = fence(pinned, pinnedCount);
        if (copied != 0) {
            throw context.calls().checked().fail(copied, batched ? BATCH : COPY);
        }
        if (fenced != 0) {
            throw context.calls().checked().fail(fenced, "cuEventRecord (fence after " + (batched ? BATCH : COPY) + ")");
        }
    }

    private int oneAtATime(BatchCopyCalls calls, StreamState s, int count) {
        for (int i = 0; i < count; i++) {
            // Safety: as for the batch, one checked range pair at a time.
            int r = calls.tryCopy(destinations.getAtIndex(ValueLayout.JAVA_LONG, i),
                    sources.getAtIndex(ValueLayout.JAVA_LONG, i), sizes.getAtIndex(ValueLayout.JAVA_LONG, i), s.handle());
            if (r != 0) {
                return r;
            }
        }
        return 0;
    }

    /** Fences every pinned memory of the batch; the first failed record's result, or 0. */
    private static int fence(PinnedMemory[] pinned, int pinnedCount) {
        int first = 0;
        for (int i = 0; i < pinnedCount; i++) {
            int r = pinned[i].fenceBatch();
            if (first == 0) {
                first = r;
            }
        }
        return first;
    }

    /** Frees the arrays (not while a submission is running: the batch serializes both). */
    @Override
    public void close() {
        arena.close();
    }
}
