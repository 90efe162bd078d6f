package dev.gatun.cuda;

/**
 * What Gatun counted for one {@link MemoryPool} ({@link MemoryPool#counters()}); the driver's own
 * view of the pool's memory is {@link MemoryPool#usage()}. A pool allocation also counts in its
 * context's {@link ContextCounters} as a stream-ordered allocation and free.
 *
 * @param allocations allocations made from the pool ({@code cuMemAllocFromPoolAsync})
 * @param frees those freed again (their stream-ordered free queued)
 * @param liveBytes bytes allocated from the pool and not yet freed (including those awaiting retirement)
 * @param capRefusals allocations refused by the pool's hard cap ({@link MemoryPoolOptions#hardCapBytes}):
 *     by Gatun, or by the driver where it enforces the cap and the pool's reserved bytes plus the
 *     request passed it
 * @param softLimitTrims times the pool, idle above its soft limit ({@link MemoryPoolOptions#softLimitBytes}),
 *     was trimmed down to it
 */
public record MemoryPoolCounters(long allocations, long frees, long liveBytes, long capRefusals, long softLimitTrims) {

    /**
     * Counters of a pool without cap events.
     *
     * @param allocations as the record component of that name
     * @param frees as the record component of that name
     * @param liveBytes as the record component of that name
     */
    public MemoryPoolCounters(long allocations, long frees, long liveBytes) {
        this(allocations, frees, liveBytes, 0, 0);
    }
}
