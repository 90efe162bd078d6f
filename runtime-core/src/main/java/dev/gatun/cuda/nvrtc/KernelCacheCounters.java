package dev.gatun.cuda.nvrtc;

/**
 * What a {@link KernelCache} has done since it was made ({@link KernelCache#counters()}).
 *
 * @param hits lookups answered from an entry
 * @param misses lookups that found no entry
 * @param stores entries written
 * @param rejectedEntries entries found and ignored: not a regular file, larger than the cap,
 *     unreadable, truncated, corrupted, or of another key or format
 * @param unauthenticatedEntries entries an authenticated cache ignored: without a MAC, or with one
 *     that does not verify under the user's key
 * @param refusedLookups lookups made without the cache because its directory (or, in the
 *     authenticated mode, its key) is not trusted; the reason is logged once, at WARN
 * @param evictions entries deleted, least recently used first, to keep the cache under its cap
 *     ({@link KernelCache#maxBytes()})
 */
public record KernelCacheCounters(long hits, long misses, long stores, long rejectedEntries, long unauthenticatedEntries,
        long refusedLookups, long evictions) {
}
