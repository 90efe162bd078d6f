package dev.gatun.cuda;

/**
 * What Gatun counted for one {@link MemoryPool} ({@link MemoryPool#counters()}); the driver's own
 * view of the pool's memory is {@link MemoryPool#usage()}. A pool allocation also counts in its
 * context's {@link ContextCounters} as a stream-ordered allocation and free.
 *
 * @param allocations allocations made from the pool ({@code cuMemAllocFromPoolAsync})
 * @param frees those freed again (their stream-ordered free queued)
 * @param bytesLive bytes allocated from the pool and not yet freed (including those awaiting retirement)
 */
public record MemoryPoolCounters(long allocations, long frees, long bytesLive) {
}
