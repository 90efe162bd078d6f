package dev.gatun.cuda.internal.memory;

import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.MemoryPoolCounters;
import dev.gatun.cuda.MemoryReport;
import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.PoolExportHandle;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.LedgerPool;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.Retirement;
import dev.gatun.cuda.internal.context.StreamState;
import dev.gatun.cuda.internal.context.SwitchPoint;
import dev.gatun.cuda.internal.pool.PoolCaps;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;

/**
 * A CUDA memory pool ({@code cuMemPool*}) behind a {@code MemoryPool}: its handle, its counters,
 * its caps and its retirement. Each allocation from it ({@link PoolAllocation}, or an imported
 * {@link IpcPoolMapping}) holds it from before the driver allocates until its free is queued, so
 * a closed pool is destroyed only after every allocation from it was freed, and after the work
 * queued on every stream that allocated from it.
 *
 * <p><b>Caps.</b> The hard cap is the driver's {@code maxSize} where it has one (CUDA 12.2 and
 * newer): a refusal then comes from the driver as an out-of-memory result. Otherwise Gatun claims
 * each allocation's bytes against it before the driver is asked, and gives them back at the free.
 * The soft limit is checked at the context's safe points ({@link #trimIfIdle}). A pool without
 * caps pays nothing for them.
 */
public final class PoolMemory extends NativeResource implements LedgerPool {

    private static final int RELEASE_THRESHOLD = CudaDriver.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD();
    private static final int RESERVED_CURRENT = CudaDriver.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT();
    private static final int USED_CURRENT = CudaDriver.CU_MEMPOOL_ATTR_USED_MEM_CURRENT();
    private static final int OUT_OF_MEMORY = CudaDriver.CUDA_ERROR_OUT_OF_MEMORY();

    /** The pool; for the device's default pool, null until first used (asking for it is a driver call). */
    private volatile MemorySegment handle;
    private final boolean deviceDefault;
    /** How the pool can be exported; NONE for the default pool and imported pools. */
    private final PoolExportHandle exportHandle;
    /** Imported from another process's file descriptor: it only imports allocations. */
    private final boolean imported;
    /** Exported once: the driver exports its allocations only from then on. */
    private volatile boolean exported;
    // The counts of what no stream's ledger keeps: imports, frees by retirement, and what the
    // ledgers handed back (fold). An allocation and a free at close in a stream's order count on
    // that stream's ledger, under the lock they hold anyway (StreamLedger.poolAllocated).
    private final LongAdder allocations = new LongAdder();
    private final LongAdder frees = new LongAdder();
    private final LongAdder bytesLive = new LongAdder();
    /** Odd while a ledger's counts are folded in (under {@link #foldLock}): {@link #counters()} reads again across one. */
    private volatile long folds;
    private final Object foldLock = new Object();
    private final Recycler<PoolAllocation> recycler = new Recycler<>();
    private final PoolCaps caps;
    /** Whether Gatun enforces the hard cap (the driver has no {@code maxSize}); false without a cap. */
    private final boolean capByGatun;
    private final PoolRegistry registry;

    /**
     * A pool, listed in {@code registry} until it is destroyed.
     *
     * @param capByGatun whether Gatun enforces {@code caps}' hard cap, which the driver was not given
     */
    public PoolMemory(ContextState state, MemorySegment handle, boolean deviceDefault, PoolExportHandle exportHandle,
            boolean imported, PoolCaps caps, boolean capByGatun, PoolRegistry registry) {
        super(state, OwnerKind.MEMORY_POOL);
        this.handle = handle;
        this.deviceDefault = deviceDefault;
        this.exportHandle = exportHandle;
        this.imported = imported;
        this.caps = caps;
        this.capByGatun = capByGatun && caps.capped();
        this.registry = registry;
        registry.add(this);
    }

    /** The pool handle; the device's default pool is asked for on first use. */
    public MemorySegment handle() {
        MemorySegment h = handle;
        return h != null ? h : defaultHandle();
    }

    private synchronized MemorySegment defaultHandle() {
        if (handle == null) {
            handle = context.calls().pools().defaultPool(context.device());
        }
        return handle;
    }

    public boolean deviceDefault() {
        return deviceDefault;
    }

    public PoolExportHandle exportHandle() {
        return exportHandle;
    }

    public boolean imported() {
        return imported;
    }

    /** Whether the pool was exported ({@link #markExported()}), which the driver requires before exporting an allocation. */
    public boolean exported() {
        return exported;
    }

    /** The pool was exported to another process. */
    public void markExported() {
        exported = true;
    }

    Recycler<PoolAllocation> recycler() {
        return recycler;
    }

    /**
     * Takes the hold an allocation keeps on its pool, before the driver is asked, so that a
     * close racing with the allocation defers the destroy instead of running it first.
     */
    void holdForAllocation() {
        hold();
    }

    /**
     * As {@link #holdForAllocation()}, for an allocation of {@code bytes}, which it also claims
     * against the hard cap where Gatun enforces it.
     *
     * @throws dev.gatun.cuda.CudaException {@code CUDA_ERROR_OUT_OF_MEMORY} when they would pass the cap (nothing held)
     */
    void holdForAllocation(long bytes) {
        hold();
        if (capByGatun && !caps.tryClaim(bytes)) {
            unhold();
            throw caps.refusal(identity(), bytes, context.device());
        }
    }

    /**
     * The allocation of {@code bytes} failed with {@code failure}: drops its hold and claim. A
     * driver refusal of a pool whose cap the driver enforces is counted as the cap's when the
     * pool's reserved bytes and the request pass it (one attribute read, on this failure path only).
     */
    void notAllocated(long bytes, RuntimeException failure) {
        unhold();
        if (capByGatun) {
            caps.unclaim(bytes);
        } else if (caps.capped() && failure instanceof CudaException e && e.result() == OUT_OF_MEMORY) {
            try {
                if (context.calls().pools().attribute64(handle(), RESERVED_CURRENT) > caps.hardCap() - bytes) {
                    caps.countRefusal(identity(), bytes);
                }
            } catch (CudaException unreadable) {
                failure.addSuppressed(unreadable); // the allocation's own error stays the one reported
            }
        }
    }

    /** The allocation the hold was taken for was made, on {@code stream} (under its lock). */
    void allocated(long bytes, StreamState stream) {
        stream.ledger().poolAllocated(this, bytes);
        // The destroy waits for a fence on every stream that allocated from the pool.
        usedOn(stream);
    }

    /** The allocation the hold was taken for was imported from another process. */
    void importedAllocation(long bytes) {
        allocations.increment();
        bytesLive.add(bytes);
    }

    /** The allocation was not made: drops its hold. */
    void notAllocated() {
        unhold();
    }

    /**
     * An allocation's free was queued (or made) by retirement: counted, and its hold dropped, which
     * may let a closed pool retire.
     */
    void freed(long bytes) {
        frees.increment();
        bytesLive.add(-bytes);
        letGo(bytes);
    }

    /**
     * An allocation's free was queued at its close, in the order of the stream it was allocated
     * on, and counted on that stream's ledger ({@link PoolAllocation#countFreeAtClose}): its hold
     * dropped (outside the stream's lock).
     */
    void freedAtClose(long bytes) {
        letGo(bytes);
    }

    private void letGo(long bytes) {
        if (capByGatun) {
            caps.unclaim(bytes);
        }
        unhold();
    }

    @Override
    public void fold(long allocated, long freed, long liveBytes) {
        synchronized (foldLock) {
            SwitchPoint.POOL_FOLD.reach();
            folds++; // odd: a fold in progress
            SwitchPoint.POOL_FOLD.reach();
            allocations.add(allocated);
            frees.add(freed);
            bytesLive.add(liveBytes);
            SwitchPoint.POOL_FOLD.reach();
            folds++;
        }
    }

    /** Retirement gave an allocation's free up: it stays allocated, but nothing uses it, so the pool may go. */
    void abandoned() {
        unhold();
    }

    /**
     * The counters now: the pool's own and what the streams' ledgers keep for it. Read in that
     * order (a free by retirement counts here after its allocation counted on a ledger, so no
     * snapshot shows more frees than allocations, or fewer live bytes than 0), and read again when
     * a ledger handed its counts back meanwhile. Never call it under a stream's lock.
     */
    public MemoryPoolCounters counters() {
        long[] c = new long[3];
        while (true) {
            SwitchPoint.POOL_FOLD.reach();
            long before = folds;
            while ((before & 1) != 0) {
                Thread.yield(); // a fold in progress is a few adds
                before = folds;
            }
            c[0] = allocations.sum();
            c[1] = frees.sum();
            c[2] = bytesLive.sum();
            context.stats().addPoolCounts(this, c);
            SwitchPoint.POOL_FOLD.reach();
            if (folds == before) {
                return new MemoryPoolCounters(c[0], c[1], c[2], caps.refusals(), caps.softTrims());
            }
        }
    }

    /** Whether it has a soft limit for the safe points to check. */
    boolean softLimited() {
        return caps.softLimited() && !imported;
    }

    /**
     * For the out-of-memory ladder: returns what the pool reserves beyond its release threshold
     * to the device ({@code cuMemPoolTrimTo}), as a synchronization would.
     *
     * @return the reserved bytes given back
     */
    long trimToReleaseThreshold() {
        return whileHeld(() -> {
            MemorySegment h = handle();
            return trimTo(h, context.calls().pools().attribute64(h, RELEASE_THRESHOLD));
        });
    }

    /**
     * At a safe point: when the pool has a soft limit, was idle since the previous check (no
     * allocation from it) and reserves more than the limit, trims it down to the limit.
     *
     * @return the reserved bytes given back
     */
    long trimIfIdle() {
        // At a safe point (ctx.reap, ctx.synchronize): no stream's lock is held, so the ledgers can be read.
        if (!caps.softLimited() || !caps.idle(counters().allocations())) {
            return 0;
        }
        long freed = whileHeld(() -> trimTo(handle(), caps.softLimit()));
        if (freed > 0) {
            caps.countSoftTrim(identity(), freed);
        }
        return freed;
    }

    /**
     * Runs {@code action} on a pool this process allocates from, holding it so that no retirement
     * destroys it meanwhile; 0 for an imported pool, or one closed with nothing left to hold it.
     */
    private long whileHeld(LongSupplier action) {
        if (imported) {
            return 0;
        }
        try {
            hold();
        } catch (IllegalStateException closed) {
            return 0; // destroyed, or about to be: nothing of it to trim
        }
        try {
            return action.getAsLong();
        } finally {
            unhold();
        }
    }

    /** Trims to {@code keep} bytes when it reserves more; the reserved bytes given back. */
    private long trimTo(MemorySegment h, long keep) {
        long before = context.calls().pools().attribute64(h, RESERVED_CURRENT);
        if (before <= keep) {
            return 0;
        }
        context.calls().pools().trimTo(h, keep);
        return Math.max(0, before - context.calls().pools().attribute64(h, RESERVED_CURRENT));
    }

    /**
     * The pool's line of a memory report: the driver's reserved and used bytes (-1 when not
     * asked for, or unreadable), and Gatun's.
     */
    MemoryReport.Pool report(boolean askDriver) {
        long[] figures = {-1, -1};
        if (askDriver) {
            readUsage(figures);
        }
        return new MemoryReport.Pool(identity(), figures[0], figures[1], counters().liveBytes(), caps.hardCap(),
                caps.softLimit());
    }

    /** Reads the reserved and used bytes into {@code figures}, leaving those it cannot read. */
    private void readUsage(long[] figures) {
        try {
            whileHeld(() -> {
                MemorySegment h = handle();
                figures[0] = context.calls().pools().attribute64(h, RESERVED_CURRENT);
                figures[1] = context.calls().pools().attribute64(h, USED_CURRENT);
                return 0;
            });
        } catch (CudaException unreadable) {
            // A report never fails the error it describes: the figures stay unknown.
        }
    }

    @Override
    protected Retirement.Release howToFree() {
        if (deviceDefault) {
            // The driver's, for the life of the process: only the context's view ends.
            return Retirement.Release.withoutDriver(() -> registry.remove(this));
        }
        // Every allocation from the pool was freed (its hold dropped), and the work queued on
        // each stream that allocated from it before the close has completed. An imported pool is
        // this process's own pool object, destroyed the same way once every allocation imported
        // from it was freed here.
        return new Retirement.Release() {
            @Override
            public int free() {
                int r = context.calls().pools().destroy(handle);
                if (r == 0) {
                    registry.remove(PoolMemory.this);
                }
                return r;
            }

            @Override
            public void abandoned() {
                registry.remove(PoolMemory.this); // left to the driver: nothing may trim or report it
            }
        };
    }

    @Override
    protected boolean synchronizingFree() {
        return !deviceDefault; // the driver does not say that cuMemPoolDestroy never synchronizes: the safe side
    }

    @Override
    public String identity() {
        return "MemoryPool#" + id() + " (device " + context.device()
                + (deviceDefault ? ", default)" : imported ? ", imported)" : ")");
    }
}
