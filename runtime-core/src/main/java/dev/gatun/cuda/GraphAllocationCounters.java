package dev.gatun.cuda;

/**
 * Gatun's counts of the buffers allocated inside its captures ({@link ContextDiagnostics#graphAllocationCounters()}):
 * allocation nodes made with {@link Stream#allocate} while a capture was open on the stream.
 * They are counted here and not in {@link ContextCounters}' stream-ordered allocations, since
 * their memory exists only while their graph's launches hold it.
 *
 * @param allocations graph allocations made, ever
 * @param liveAllocations those whose owner has not been retired yet: open, or closed and waiting for their
 *     graph, its executable or their fences (a buffer freed inside its capture included, until
 *     its graph is gone)
 * @param liveBytes their bytes
 */
public record GraphAllocationCounters(long allocations, long liveAllocations, long liveBytes) {
}
