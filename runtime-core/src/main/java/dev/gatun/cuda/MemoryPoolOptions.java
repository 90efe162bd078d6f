package dev.gatun.cuda;

import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;

/**
 * Settings of a new {@link MemoryPool} ({@link CudaContext#createMemoryPool}); the first two can
 * be changed later on the pool itself, the export handle cannot.
 *
 * @param releaseThreshold bytes of freed memory the pool keeps reserved across synchronizations
 *     instead of returning them to the device ({@code CU_MEMPOOL_ATTR_RELEASE_THRESHOLD}); 0, the
 *     driver's default, returns everything at the next synchronization, {@link Long#MAX_VALUE}
 *     keeps everything until a {@link MemoryPool#trimTo trim}
 * @param reuse the reuse policies that are on (all, by default)
 * @param exportHandle how the pool can be shared with other processes ({@link PoolExportHandle#NONE}, by default)
 */
public record MemoryPoolOptions(long releaseThreshold, Set<PoolReuse> reuse, PoolExportHandle exportHandle) {

    public MemoryPoolOptions {
        if (releaseThreshold < 0) {
            throw new IllegalArgumentException("releaseThreshold is " + releaseThreshold
                    + "; give a number of bytes >= 0 (Long.MAX_VALUE keeps every freed byte reserved)");
        }
        Objects.requireNonNull(reuse, "reuse");
        reuse = reuse.isEmpty() ? Set.of() : Set.copyOf(EnumSet.copyOf(reuse));
        Objects.requireNonNull(exportHandle, "exportHandle");
    }

    /** Options of a pool that is not exported. */
    public MemoryPoolOptions(long releaseThreshold, Set<PoolReuse> reuse) {
        this(releaseThreshold, reuse, PoolExportHandle.NONE);
    }

    /** The driver's defaults: release threshold 0, every reuse policy on. */
    public static MemoryPoolOptions defaults() {
        return new MemoryPoolOptions(0, EnumSet.allOf(PoolReuse.class));
    }

    public MemoryPoolOptions withReleaseThreshold(long bytes) {
        return new MemoryPoolOptions(bytes, reuse, exportHandle);
    }

    /** These options with {@code policy} switched on or off. */
    public MemoryPoolOptions withReuse(PoolReuse policy, boolean on) {
        EnumSet<PoolReuse> next = reuse.isEmpty() ? EnumSet.noneOf(PoolReuse.class) : EnumSet.copyOf(reuse);
        if (on) {
            next.add(Objects.requireNonNull(policy, "policy"));
        } else {
            next.remove(Objects.requireNonNull(policy, "policy"));
        }
        return new MemoryPoolOptions(releaseThreshold, next, exportHandle);
    }

    /**
     * These options with the pool exportable through {@code handle}
     * ({@link MemoryPool#exportFileDescriptor()}; its allocations with {@link DeviceBuffer#exportForIpc()}).
     */
    public MemoryPoolOptions withExportHandle(PoolExportHandle handle) {
        return new MemoryPoolOptions(releaseThreshold, reuse, handle);
    }
}
