package dev.gatun.cuda.internal.memory;

import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.Retirement;
import dev.gatun.cuda.internal.context.StreamState;

/**
 * A stream-ordered allocation ({@code Stream.allocate}: {@code cuMemAllocAsync} from the device's
 * current pool), counted as used on its stream from the start. Used on that stream only, it is
 * freed at its close in that stream's order ({@code cuMemFreeAsync}), which the driver runs after
 * the work queued before; used on several, it is freed on the synchronous stream once the work
 * queued on each has completed. Recycled.
 */
public sealed class StreamOrdered extends DeviceMemory implements Retirement.Release permits PoolAllocation {

    private final Recycler<StreamOrdered> recycler;

    StreamOrdered(ContextState context, long address, long bytes, StreamState origin,
            Recycler<StreamOrdered> recycler) {
        super(context, address, bytes, origin);
        this.recycler = recycler;
    }

    /**
     * {@code bytes} (more than 0) allocated in {@code stream}'s order; call under the stream's
     * lock, with the stream not capturing.
     */
    public static StreamOrdered allocate(ContextState context, StreamState stream, Recycler<StreamOrdered> recycler,
            long bytes) {
        long address = context.calls().memory().allocateAsync(bytes, stream.handle(), stream.allocationOut());
        stream.ledger().allocated(bytes);
        StreamOrdered memory = recycler.take(stream);
        if (memory == null) {
            return new StreamOrdered(context, address, bytes, stream, recycler);
        }
        memory.reuse(address, bytes, stream);
        return memory;
    }

    @Override
    Watch watch() {
        return Watch.SAMPLED;
    }

    @Override
    protected final boolean countsLifeOnStream() {
        return true; // made under its stream's lock, and freed at close under it: plain counts in its ledger
    }

    @Override
    protected final boolean freeAtClose(StreamState soleStream, boolean countClose) {
        if (soleStream == null) {
            return false; // several streams used it: wait for all their fences instead
        }
        long bytes = size; // read before the object can be recycled, which may resize it
        synchronized (soleStream.lock()) {
            if (soleStream.closed() || soleStream.queuesIntoCapture()) {
                return false;
            }
            // Every use of the memory was queued on this stream (the only one that used it), so
            // the driver frees it after that work, in order.
            if (context.calls().memory().freeAsync(address, soleStream.handle()) != 0) {
                return false; // retried by retirement, after the fences
            }
            soleStream.ledger().freed(bytes);
            countFreeAtClose(soleStream, bytes);
            if (countClose) {
                soleStream.ledger().ownerClosed(); // the ledger that counted it open: its origin is its sole stream
            }
            // Kept for the next allocation on this stream, under the lock that allocation takes:
            // from here on another thread may stand this object for a new allocation. Nothing
            // below reads its mutable fields (closing it, which called this, counts only its kind).
            recycleOn(soleStream);
        }
        released(null, bytes, true); // outside the stream's lock: a pool's retirement may record a fence on it
        return true;
    }

    @Override
    protected final Retirement.Release howToFree() {
        return this;
    }

    @Override
    public final int free() {
        StreamState sync = syncStreamIfOpen();
        int r = freeAfterFences(sync);
        if (r == 0) {
            freed(sync);
        }
        return r;
    }

    /**
     * The memory was freed (its free queued on {@code freeStream}, or made synchronously when
     * null, after fences; or at close on the sole stream, also null): counted, and recycled.
     */
    private void freed(StreamState freeStream) {
        long bytes = size;
        context.stats().retiredAsyncFree(bytes);
        released(freeStream, bytes, false);
        recycle();
    }

    /**
     * What a kind counts of its free at close of {@code bytes} on {@code stream}, under that
     * stream's lock (its ledger); nothing here.
     */
    void countFreeAtClose(StreamState stream, long bytes) {
    }

    /**
     * What a kind lets go of once its {@code bytes} of memory are freed (see {@link #freed} and
     * {@link #freeAtClose}, which may have recycled this object already: read no mutable field);
     * nothing here.
     *
     * @param countedAtClose whether {@link #countFreeAtClose} counted the free (at close, in the
     *     stream's order), or it was made by retirement
     */
    void released(StreamState freeStream, long bytes, boolean countedAtClose) {
    }

    /** Gives this freed object back for the next allocation on {@code stream}; call under its lock. */
    void recycleOn(StreamState stream) {
        recycler.giveBack(this, stream);
    }

    @Override
    protected final boolean synchronizingFree() {
        return false; // cuMemFreeAsync (cuMemFree only at shutdown, whose drain holds the gate)
    }

    @Override
    void recycle() {
        recycler.giveBack(this);
    }

    @Override
    public String identity() {
        return describe("stream-ordered");
    }
}
