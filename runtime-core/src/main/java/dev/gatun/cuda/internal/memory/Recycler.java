package dev.gatun.cuda.internal.memory;

import dev.gatun.cuda.internal.context.StreamState;
import dev.gatun.cuda.internal.context.SwitchPoint;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Freed memory objects of one kind, kept to stand for the next allocations of that kind: an
 * allocate + close then makes no object but the buffer handle. A bounded stack; a full one drops
 * what it is given. Nothing is recycled with leak tracking on, whose listing names resource
 * objects. An object is given back only once its memory was freed, its close counted and
 * nothing holds it, so no retirement or graph can reach it any more.
 */
public final class Recycler<T extends DeviceMemory> {

    /** Kept objects at most: more than the allocations in flight at once of any sane loop. */
    static final int CAPACITY = 64;

    /**
     * The object freed last, taken first without a lock: an allocate + close loop, the common
     * case, then costs one atomic exchange each way.
     */
    private final AtomicReference<T> spare = new AtomicReference<>();
    private final DeviceMemory[] kept = new DeviceMemory[CAPACITY - 1];
    private int count; // guarded by this

    /** A freed object of this kind, or null when none is kept. */
    T take() {
        SwitchPoint.RECYCLE.reach();
        T m = spare.getAndSet(null);
        return m != null ? m : takeKept();
    }

    /**
     * As {@link #take()}, first trying the object last freed in {@code stream}'s order, which its
     * ledger keeps (call under the stream's lock): an allocate + close loop on one stream then
     * takes and gives back with no atomic instruction.
     */
    @SuppressWarnings("unchecked") // the ledger hands this recycler only the T's it was given for it
    T take(StreamState stream) {
        T m = (T) stream.ledger().takeSpare(this);
        return m != null ? m : take();
    }

    @SuppressWarnings("unchecked") // only T's are given back
    private synchronized T takeKept() {
        if (count == 0) {
            return null;
        }
        DeviceMemory m = kept[--count];
        kept[count] = null;
        return (T) m;
    }

    /** Keeps a freed object for reuse (unless leaks are tracked, or every place is taken). */
    void giveBack(T memory) {
        SwitchPoint.RECYCLE.reach();
        if (memory.context().leakTracking() || spare.compareAndSet(null, memory)) {
            return;
        }
        synchronized (this) {
            if (count < kept.length) {
                kept[count++] = memory;
            }
        }
    }

    /**
     * As {@link #giveBack(DeviceMemory)}, for an object freed in {@code stream}'s order (call under
     * the stream's lock): kept by the stream's ledger for its next allocation, where it has room.
     */
    void giveBack(T memory, StreamState stream) {
        if (memory.context().leakTracking() || stream.ledger().keepSpare(memory, this)) {
            return;
        }
        giveBack(memory);
    }

    /** Objects kept now (for tests). */
    public synchronized int kept() {
        return count + (spare.get() != null ? 1 : 0);
    }
}
