package dev.gatun.cuda.internal.memory;

import dev.gatun.cuda.internal.context.ContextState;

/**
 * Another process's pool allocation mapped into this one from the pool this process imported
 * ({@code MemoryPool.importAllocation}: {@code cuMemPoolImportPointer}): borrowed, freed here with
 * {@code cuMemFree} once this process's work on it completed (the driver requires importers to
 * free before the exporter does). It holds its imported pool until then.
 */
public final class IpcPoolMapping extends ImportedMemory {

    private final PoolMemory pool;

    private IpcPoolMapping(ContextState context, PoolMemory pool, long address, long bytes) {
        super(context, address, bytes);
        this.pool = pool;
    }

    /**
     * Maps the allocation {@code driverHandle} (a {@code CUmemPoolPtrExportData}) names from the
     * imported {@code pool}, and checks that the mapping spans the {@code claimed} bytes; a
     * shorter one is freed again (through this kind's own release) and refused.
     *
     * @throws IllegalArgumentException when the claim exceeds what the driver mapped
     */
    public static IpcPoolMapping open(ContextState context, PoolMemory pool, byte[] driverHandle, long claimed) {
        pool.holdForAllocation(); // the imported pool is destroyed only after this import is freed
        long address;
        try {
            address = context.calls().pools().importPointer(pool.handle(), driverHandle);
        } catch (RuntimeException e) {
            pool.notAllocated();
            throw e;
        }
        pool.importedAllocation(claimed);
        return checked(new IpcPoolMapping(context, pool, address, claimed));
    }

    @Override
    public int free() {
        // Every fence of this process's work on the import completed. cuMemFree of an imported
        // pool allocation completes before it returns: the importer's free precedes the
        // exporter's, as the driver requires, once the application tells the exporter.
        int r = context.calls().memory().free(address);
        if (r == 0) {
            pool.freed(size);
        }
        return r;
    }

    @Override
    public void abandoned() {
        pool.abandoned();
    }

    @Override
    public String identity() {
        return describe("imported from " + pool.identity());
    }
}
