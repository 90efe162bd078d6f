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
 * @param trims times the pool returned all it held to the driver (explicitly, or to retry an
 *     allocation that ran out of memory)
 */
public record DevicePoolCounters(long hits, long misses, long retainedBytes, long retainedBlocks, long allocations,
        long frees, long trims) {
}
