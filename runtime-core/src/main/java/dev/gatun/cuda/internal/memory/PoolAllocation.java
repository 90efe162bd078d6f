package dev.gatun.cuda.internal.memory;

import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.StreamState;

/**
 * A stream-ordered allocation from a created memory pool ({@code MemoryPool.allocate}:
 * {@code cuMemAllocFromPoolAsync}), freed as any {@link StreamOrdered} allocation. It holds its
 * pool from the allocation until its free is queued, so that a closed pool is destroyed only
 * after every allocation from it was freed. Recycled by its pool.
 */
public final class PoolAllocation extends StreamOrdered {

    private final PoolMemory pool;

    private PoolAllocation(ContextState context, PoolMemory pool, long address, long bytes, StreamState origin) {
        super(context, address, bytes, origin, null);
        this.pool = pool;
    }

    /**
     * {@code bytes} (more than 0) allocated from {@code pool} in {@code stream}'s order; call under
     * the stream's lock, with the stream not capturing. Out of memory (or over the pool's hard
     * cap), it throws: the caller climbs the out-of-memory ladder outside the lock.
     */
    public static PoolAllocation allocate(ContextState context, PoolMemory pool, StreamState stream, long bytes) {
        pool.holdForAllocation(bytes); // a close racing with the allocation defers the pool's destroy
        long address;
        try {
            address = context.calls().pools().allocate(bytes, pool.handle(), stream.handle(), stream.allocationOut());
        } catch (RuntimeException e) {
            pool.notAllocated(bytes, e);
            throw e;
        }
        pool.allocated(bytes, stream);
        stream.ledger().allocated(bytes);
        PoolAllocation memory = pool.recycler().take(stream);
        if (memory == null) {
            return new PoolAllocation(context, pool, address, bytes, stream);
        }
        memory.reuse(address, bytes, stream);
        return memory;
    }

    /** The pool it came from. */
    public PoolMemory pool() {
        return pool;
    }

    @Override
    void countFreeAtClose(StreamState stream, long bytes) {
        stream.ledger().poolFreed(pool, bytes);
    }

    @Override
    void released(StreamState freeStream, long bytes, boolean countedAtClose) {
        if (freeStream != null) {
            pool.usedOn(freeStream); // the pool's destroy waits for this free too
        }
        if (countedAtClose) {
            pool.freedAtClose(bytes);
        } else {
            pool.freed(bytes);
        }
    }

    @Override
    public void abandoned() {
        pool.abandoned(); // never freed, but nothing uses it: the pool may go
    }

    @Override
    void recycle() {
        pool.recycler().giveBack(this);
    }

    @Override
    void recycleOn(StreamState stream) {
        pool.recycler().giveBack(this, stream);
    }

    @Override
    public String identity() {
        return describe("stream-ordered from " + pool.identity());
    }
}
