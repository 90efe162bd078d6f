package dev.gatun.cuda.internal.memory;

import dev.gatun.cuda.MemoryPoolCounters;
import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.PoolExportHandle;
import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.Retirement;
import dev.gatun.cuda.internal.context.StreamState;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.LongAdder;

/**
 * A CUDA memory pool ({@code cuMemPool*}) behind a {@code MemoryPool}: its handle, its counters
 * and its retirement. Each allocation from it ({@link PoolAllocation}, or an imported
 * {@link IpcPoolMapping}) holds it from before the driver allocates until its free is queued, so
 * a closed pool is destroyed only after every allocation from it was freed, and after the work
 * queued on every stream that allocated from it.
 */
public final class PoolMemory extends NativeResource {

    /** The pool; for the device's default pool, null until first used (asking for it is a driver call). */
    private volatile MemorySegment handle;
    private final boolean deviceDefault;
    /** How the pool can be exported; NONE for the default pool and imported pools. */
    private final PoolExportHandle exportHandle;
    /** Imported from another process's file descriptor: it only imports allocations. */
    private final boolean imported;
    /** Exported once: the driver exports its allocations only from then on. */
    private volatile boolean exported;
    private final LongAdder allocations = new LongAdder();
    private final LongAdder frees = new LongAdder();
    private final LongAdder bytesLive = new LongAdder();
    private final Recycler<PoolAllocation> recycler = new Recycler<>();

    public PoolMemory(ContextState state, MemorySegment handle, boolean deviceDefault, PoolExportHandle exportHandle,
            boolean imported) {
        super(state, OwnerKind.MEMORY_POOL);
        this.handle = handle;
        this.deviceDefault = deviceDefault;
        this.exportHandle = exportHandle;
        this.imported = imported;
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

    /** The allocation the hold was taken for was made, on {@code stream} (under its lock). */
    void allocated(long bytes, StreamState stream) {
        allocations.increment();
        bytesLive.add(bytes);
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

    /** An allocation's free was queued (or made): drops its hold, which may let a closed pool retire. */
    void freed(long bytes) {
        frees.increment();
        bytesLive.add(-bytes);
        unhold();
    }

    /** Retirement gave an allocation's free up: it stays allocated, but nothing uses it, so the pool may go. */
    void abandoned() {
        unhold();
    }

    public MemoryPoolCounters counters() {
        return new MemoryPoolCounters(allocations.sum(), frees.sum(), bytesLive.sum());
    }

    @Override
    protected Retirement.Release howToFree() {
        if (deviceDefault) {
            return Retirement.Release.withoutDriver(() -> { }); // the driver's, for the life of the process
        }
        // Every allocation from the pool was freed (its hold dropped), and the work queued on
        // each stream that allocated from it before the close has completed. An imported pool is
        // this process's own pool object, destroyed the same way once every allocation imported
        // from it was freed here.
        return () -> context.calls().pools().destroy(handle);
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
