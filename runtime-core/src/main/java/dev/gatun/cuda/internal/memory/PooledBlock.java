package dev.gatun.cuda.internal.memory;

import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.Retirement;
import dev.gatun.cuda.internal.context.StreamState;
import dev.gatun.cuda.internal.pool.DevicePool;

/**
 * A block of the context's device pool ({@code CudaContext.allocate}): given back to the pool
 * once the work queued on every stream that used it has completed (the pool keeps it for the
 * next request or frees it with {@code cuMemFree}). A block no stream used goes back at its
 * close, when the pool keeps it without a driver call. Recycled.
 */
public final class PooledBlock extends DeviceMemory implements Retirement.Release {

    private final DevicePool pool;
    private final Recycler<PooledBlock> recycler;

    private PooledBlock(ContextState context, DevicePool pool, Recycler<PooledBlock> recycler, long address,
            long bytes) {
        super(context, address, bytes, null);
        this.pool = pool;
        this.recycler = recycler;
    }

    /**
     * A block of at least {@code bytes} (more than 0) from {@code pool}: a pool hit, or
     * {@code cuMemAlloc}; out of memory (or over the pool's hard cap), after {@code ladder}'s climb.
     */
    public static PooledBlock allocate(ContextState context, DevicePool pool, Recycler<PooledBlock> recycler,
            long bytes, OutOfMemoryLadder ladder) {
        long address;
        try {
            address = pool.acquire(bytes);
        } catch (CudaException e) {
            address = ladder.retry(e, AllocationKind.DEVICE_POOL, bytes, () -> pool.acquire(bytes));
        }
        PooledBlock block = recycler.take();
        if (block == null) {
            return new PooledBlock(context, pool, recycler, address, bytes);
        }
        block.reuse(address, bytes, null);
        return block;
    }

    @Override
    Watch watch() {
        return Watch.SAMPLED;
    }

    @Override
    protected boolean freeAtClose(StreamState soleStream, boolean countClose) {
        // No stream used it, so no work can still touch it: back to the pool now, if that takes
        // no driver call (a free would synchronize, and waits for retirement and its gate).
        if (usedOnAnyStream() || !pool.keep(address, size)) {
            return false;
        }
        recycle();
        return true;
    }

    @Override
    protected Retirement.Release howToFree() {
        return this;
    }

    @Override
    public int free() {
        // Every fence on every stream that used the block completed: the pool may hand it to the
        // next request, or free it (its backend counts that free).
        int r = pool.release(address, size);
        if (r == 0) {
            recycle();
        }
        return r;
    }

    @Override
    protected boolean synchronizingFree() {
        return true; // the pool may free it with cuMemFree
    }

    @Override
    void recycle() {
        recycler.giveBack(this);
    }

    @Override
    public String identity() {
        return describe("");
    }
}
