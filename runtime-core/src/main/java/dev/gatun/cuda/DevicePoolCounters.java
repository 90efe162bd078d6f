package dev.gatun.cuda;

/**
 * A snapshot of a device memory pool's counters. Each counter is exact; the snapshot is not
 * taken atomically across counters while other threads allocate and free.
 *
 * @param hits acquisitions served from a free list, without a driver call
 * @param misses acquisitions the free lists could not serve (including requests too large to
 *     pool, and every acquisition while pooling is disabled)
 * @param retainedBytes device bytes held in the free lists now
 * @param retainedBlocks device blocks held in the free lists now
 * @param allocations allocations made through the driver
 * @param frees frees made through the driver that succeeded
 * @param trims times the pool returned all it held to the driver (explicitly, or on the
 *     out-of-memory ladder)
 * @param capRefusals misses refused because they would pass the pool's hard cap
 *     ({@link DevicePoolOptions#hardCapBytes})
 * @param softLimitTrims times the pool, idle above its soft limit ({@link DevicePoolOptions#softLimitBytes}),
 *     freed retained blocks down to it
 */
public record DevicePoolCounters(long hits, long misses, long retainedBytes, long retainedBlocks, long allocations,
        long frees, long trims, long capRefusals, long softLimitTrims) {

    /**
     * Counters of a pool without cap events.
     *
     * @param hits as the record component of that name
     * @param misses as the record component of that name
     * @param retainedBytes as the record component of that name
     * @param retainedBlocks as the record component of that name
     * @param allocations as the record component of that name
     * @param frees as the record component of that name
     * @param trims as the record component of that name
     */
    public DevicePoolCounters(long hits, long misses, long retainedBytes, long retainedBlocks, long allocations,
            long frees, long trims) {
        this(hits, misses, retainedBytes, retainedBlocks, allocations, frees, trims, 0, 0);
    }
}
