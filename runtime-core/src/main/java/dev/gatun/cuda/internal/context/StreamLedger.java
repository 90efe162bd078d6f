package dev.gatun.cuda.internal.context;

import java.util.concurrent.atomic.LongAdder;

/**
 * What the stream-ordered allocation hot path counts and keeps in one stream's order: the
 * allocations made and freed there, their live bytes, and the last freed memory object, kept for
 * the next allocation on the stream. Every method is called under the stream's lock
 * ({@link StreamState#lock()}), which an allocation and a free at close on that stream hold
 * anyway: plain fields then cost no atomic instruction, where the context's {@link LongAdder}s
 * and its recycler's exchange cost one each (six per allocate + close, about a third of Gatun's
 * time above C's two driver calls on the H200).
 *
 * <p>It also counts, for the memory pool allocated from last on the stream ({@link LedgerPool}),
 * that pool's allocations and frees at close in the stream's order, which the pool adds up in
 * its counters ({@link ContextStats#addPoolCounts}) and takes back when the stream allocates from
 * another pool or is drained.
 *
 * <p>{@link ContextStats} adds every registered stream's ledger to its own counters when it
 * takes a snapshot, and moves a stream's ledger into them when the stream is drained (no work
 * can be counted on it after its close), both under its own lock, so a snapshot counts each
 * allocation exactly once.
 */
public final class StreamLedger {

    private long allocations;
    private long frees;
    private long liveBytes;
    /** Owners made in this stream's order and not closed here ({@link NativeResource#countsLifeOnStream()}); may go negative. */
    private long liveOwners;
    /**
     * The memory pool ({@code MemoryPool}) whose allocations and frees on this stream the next
     * three fields count, for it: the last one allocated from here; null when none is.
     */
    private LedgerPool pool;
    private long poolAllocations;
    private long poolFrees;
    private long poolLiveBytes;
    /** A closed, freed memory object whose next use is an allocation on this stream; and who may take it. */
    private NativeResource spare;
    private Object spareKeeper;

    StreamLedger() {
    }

    /** Counts an allocation of {@code bytes} made in the stream's order. */
    public void allocated(long bytes) {
        SwitchPoint.LEDGER.reach();
        allocations++;
        liveBytes += bytes;
    }

    /** Counts an owner made in the stream's order live (it counts its life here). */
    public void ownerOpened() {
        SwitchPoint.LEDGER.reach();
        liveOwners++;
    }

    /** Counts such an owner closed by its free at close in the stream's order. */
    public void ownerClosed() {
        SwitchPoint.LEDGER.reach();
        liveOwners--;
    }

    /** Counts a free of {@code bytes} queued in the stream's order. */
    public void freed(long bytes) {
        SwitchPoint.LEDGER.reach();
        frees++;
        liveBytes -= bytes;
    }

    /**
     * Counts, for {@code from}, an allocation of {@code bytes} from it in the stream's order; hands
     * the counts kept for another pool back to it first.
     */
    public void poolAllocated(LedgerPool from, long bytes) {
        SwitchPoint.LEDGER.reach();
        keepCountsFor(from);
        poolAllocations++;
        poolLiveBytes += bytes;
    }

    /**
     * Counts, for {@code to}, the free at close of {@code bytes} allocated from it in the stream's
     * order; hands the counts kept for another pool back to it first.
     */
    public void poolFreed(LedgerPool to, long bytes) {
        SwitchPoint.LEDGER.reach();
        keepCountsFor(to);
        poolFrees++;
        poolLiveBytes -= bytes;
    }

    /** Adds the counts kept for {@code of} to {@code sums} (allocations, frees, live bytes); nothing when kept for another. */
    void addPoolCounts(LedgerPool of, long[] sums) {
        SwitchPoint.LEDGER.reach();
        if (pool == of) {
            sums[0] += poolAllocations;
            sums[1] += poolFrees;
            sums[2] += poolLiveBytes;
        }
    }

    private void keepCountsFor(LedgerPool next) {
        if (pool != next) {
            foldPoolCounts();
            pool = next;
        }
    }

    /** Hands the pool counts back to their pool. */
    private void foldPoolCounts() {
        if (pool != null) {
            pool.fold(poolAllocations, poolFrees, poolLiveBytes);
            pool = null;
            poolAllocations = 0;
            poolFrees = 0;
            poolLiveBytes = 0;
        }
    }

    /**
     * Keeps {@code resource} (closed, its memory freed, nothing holding it) for {@code keeper}'s
     * next {@link #takeSpare}; returns false, keeping nothing, when the place is taken.
     */
    public boolean keepSpare(NativeResource resource, Object keeper) {
        SwitchPoint.LEDGER.reach();
        if (spare != null) {
            return false;
        }
        spare = resource;
        spareKeeper = keeper;
        return true;
    }

    /** The resource kept for {@code keeper}, which leaves the ledger; null when none is. */
    public NativeResource takeSpare(Object keeper) {
        SwitchPoint.LEDGER.reach();
        if (spareKeeper != keeper) {
            return null;
        }
        NativeResource taken = spare;
        spare = null;
        spareKeeper = null;
        return taken;
    }

    /** Adds the counts to {@code sums} (allocations, frees, live bytes). */
    void addTo(long[] sums) {
        SwitchPoint.LEDGER.reach();
        sums[0] += allocations;
        sums[1] += frees;
        sums[2] += liveBytes;
        sums[3] += liveOwners;
    }

    /** Moves the counts into the context's adders, and the pool counts into their pool, and forgets the spare: the stream is drained. */
    void moveTo(LongAdder allocationsTo, LongAdder freesTo, LongAdder liveBytesTo, LongAdder liveOwnersTo) {
        SwitchPoint.LEDGER.reach();
        allocationsTo.add(allocations);
        freesTo.add(frees);
        liveBytesTo.add(liveBytes);
        liveOwnersTo.add(liveOwners);
        allocations = 0;
        frees = 0;
        liveBytes = 0;
        liveOwners = 0;
        foldPoolCounts();
        spare = null;
        spareKeeper = null;
    }
}
