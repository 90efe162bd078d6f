package dev.gatun.cuda.internal.memory;

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

    private final DeviceMemory[] kept = new DeviceMemory[CAPACITY];
    private int count; // guarded by this

    /** A freed object of this kind, or null when none is kept. */
    @SuppressWarnings("unchecked") // only T's are given back
    synchronized T take() {
        if (count == 0) {
            return null;
        }
        DeviceMemory m = kept[--count];
        kept[count] = null;
        return (T) m;
    }

    /** Keeps a freed object for reuse (unless leaks are tracked, or the stack is full). */
    void giveBack(T memory) {
        if (memory.context().leakTracking()) {
            return;
        }
        synchronized (this) {
            if (count < CAPACITY) {
                kept[count++] = memory;
            }
        }
    }

    /** Objects kept now (for tests). */
    public synchronized int kept() {
        return count;
    }
}
