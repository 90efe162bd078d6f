package dev.gatun.cuda;

import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;

/**
 * Settings of a new {@link MemoryPool} ({@link CudaContext#createMemoryPool}); the first two can
 * be changed later on the pool itself, the export handle cannot.
 *
 * @param releaseThresholdBytes bytes of freed memory the pool keeps reserved across synchronizations
 *     instead of returning them to the device ({@code CU_MEMPOOL_ATTR_RELEASE_THRESHOLD}); 0, the
 *     driver's default, returns everything at the next synchronization, {@link Long#MAX_VALUE}
 *     keeps everything until a {@link MemoryPool#trimTo trim}
 * @param reuse the reuse policies that are on (all, by default)
 * @param exportHandle how the pool can be shared with other processes ({@link PoolExportHandle#NONE}, by default)
 * @param hardCapBytes the most bytes the pool may hold: the driver's {@code CUmemPoolProps.maxSize}
 *     (a cap on the pool's reserved memory) where the driver has it (CUDA 12.2 and newer),
 *     otherwise enforced by Gatun on the bytes it allocated from the pool and has not freed. An
 *     allocation over it climbs the out-of-memory ladder, then fails with
 *     {@link OutOfDeviceMemoryException}. {@link #NO_CAP} (the default) for none
 * @param softLimitBytes above this many reserved bytes, the pool is trimmed down to it once it is
 *     idle: no allocation from it between two safe points ({@link CudaContext#reap()},
 *     {@link CudaContext#synchronize()}). When set, at most {@code hardCapBytes}; {@link #NO_CAP} (the default) for none
 */
public record MemoryPoolOptions(long releaseThresholdBytes, Set<PoolReuse> reuse, PoolExportHandle exportHandle,
        long hardCapBytes, long softLimitBytes) {

    /** No hard cap, or no soft limit. */
    public static final long NO_CAP = Long.MAX_VALUE;

    /**
     * Checks the components and copies the reuse set.
     *
     * @throws NullPointerException when {@code reuse} or {@code exportHandle} is null
     * @throws IllegalArgumentException when the release threshold is negative, a cap or limit is not positive, or
     *     the soft limit is above the hard cap
     */
    public MemoryPoolOptions {
        if (releaseThresholdBytes < 0) {
            throw new IllegalArgumentException("releaseThresholdBytes is " + releaseThresholdBytes
                    + "; give a number of bytes >= 0 (Long.MAX_VALUE keeps every freed byte reserved)");
        }
        Objects.requireNonNull(reuse, "reuse");
        reuse = reuse.isEmpty() ? Set.of() : Set.copyOf(EnumSet.copyOf(reuse));
        Objects.requireNonNull(exportHandle, "exportHandle");
        if (hardCapBytes <= 0 || softLimitBytes <= 0 || softLimitBytes != NO_CAP && softLimitBytes > hardCapBytes) {
            throw new IllegalArgumentException("hardCapBytes is " + hardCapBytes + " and softLimitBytes "
                    + softLimitBytes + "; give positive byte counts with a soft limit at most the cap "
                    + "(MemoryPoolOptions.NO_CAP for none)");
        }
    }

    /**
     * Options of a pool without a hard cap or soft limit.
     *
     * @param releaseThresholdBytes as the record component of that name
     * @param reuse as the record component of that name
     * @param exportHandle as the record component of that name
     */
    public MemoryPoolOptions(long releaseThresholdBytes, Set<PoolReuse> reuse, PoolExportHandle exportHandle) {
        this(releaseThresholdBytes, reuse, exportHandle, NO_CAP, NO_CAP);
    }

    /**
     * Options of a pool that is not exported, without a hard cap or soft limit.
     *
     * @param releaseThresholdBytes as the record component of that name
     * @param reuse as the record component of that name
     */
    public MemoryPoolOptions(long releaseThresholdBytes, Set<PoolReuse> reuse) {
        this(releaseThresholdBytes, reuse, PoolExportHandle.NONE);
    }

    /** {@return the driver's defaults: release threshold 0, every reuse policy on} */
    public static MemoryPoolOptions defaults() {
        return new MemoryPoolOptions(0, EnumSet.allOf(PoolReuse.class));
    }

    /**
     * {@return these options with another release threshold}
     *
     * @param bytes the new {@link #releaseThresholdBytes()}
     */
    public MemoryPoolOptions withReleaseThresholdBytes(long bytes) {
        return new MemoryPoolOptions(bytes, reuse, exportHandle, hardCapBytes, softLimitBytes);
    }

    /**
     * These options with {@code policy} switched on or off.
     *
     * @param policy the reuse policy to switch
     * @param on true to switch it on, false to switch it off
     * @return the new options
     */
    public MemoryPoolOptions withReuse(PoolReuse policy, boolean on) {
        EnumSet<PoolReuse> next = reuse.isEmpty() ? EnumSet.noneOf(PoolReuse.class) : EnumSet.copyOf(reuse);
        if (on) {
            next.add(Objects.requireNonNull(policy, "policy"));
        } else {
            next.remove(Objects.requireNonNull(policy, "policy"));
        }
        return new MemoryPoolOptions(releaseThresholdBytes, next, exportHandle, hardCapBytes, softLimitBytes);
    }

    /**
     * These options with the pool exportable through {@code handle}
     * ({@link MemoryPool#exportFileDescriptor()}; its allocations with {@link DeviceBuffer#exportForIpc()}).
     *
     * @param handle the kind of shareable handle the pool is exported as
     * @return the new options
     */
    public MemoryPoolOptions withExportHandle(PoolExportHandle handle) {
        return new MemoryPoolOptions(releaseThresholdBytes, reuse, handle, hardCapBytes, softLimitBytes);
    }

    /**
     * These options with a hard cap of {@code bytes} ({@link #NO_CAP}: none).
     *
     * @param bytes the new {@link #hardCapBytes()}
     * @return the new options
     */
    public MemoryPoolOptions withHardCapBytes(long bytes) {
        return new MemoryPoolOptions(releaseThresholdBytes, reuse, exportHandle, bytes, softLimitBytes);
    }

    /**
     * These options with a soft limit of {@code bytes} ({@link #NO_CAP}: none).
     *
     * @param bytes the new {@link #softLimitBytes()}
     * @return the new options
     */
    public MemoryPoolOptions withSoftLimitBytes(long bytes) {
        return new MemoryPoolOptions(releaseThresholdBytes, reuse, exportHandle, hardCapBytes, bytes);
    }
}
