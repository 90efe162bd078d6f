package dev.gatun.cuda;

/**
 * Device pool activity attributed to one call site, while call-site profiling is on.
 *
 * @param site the first frame outside Gatun's library code that asked for the memory
 * @param acquires acquisitions from that site
 * @param hits those served from the pool's free lists
 * @param misses those that needed a driver allocation
 * @param requestedBytes the bytes asked for (before rounding up to a size class)
 */
public record DevicePoolSite(StackTraceElement site, long acquires, long hits, long misses, long requestedBytes) {
}
