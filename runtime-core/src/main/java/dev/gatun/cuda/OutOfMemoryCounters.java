package dev.gatun.cuda;

/**
 * What one context's out-of-memory ladder did ({@link ContextDiagnostics#outOfMemoryCounters()}). Each
 * allocation the driver refused with {@code CUDA_ERROR_OUT_OF_MEMORY} (or a pool's hard cap
 * refused) climbs the ladder: (1) run the retirements that are due and wait for the fences of
 * pending frees, (2) trim Gatun's device pool, the CUDA memory pools and graph memory,
 * (3) synchronize; after a rung that freed something, and always after the last, the allocation is
 * tried again, and the first success ends the climb.
 *
 * @param climbs allocations that ran out of memory and climbed the ladder
 * @param retirementRuns times rung 1 ran
 * @param retirementFrees handles rung 1 freed
 * @param rescuedByRetirement allocations that succeeded after rung 1
 * @param trimRuns times rung 2 ran
 * @param trimmedBytes bytes rung 2 returned to the device (pools' reserved and graph memory, Gatun's retained blocks)
 * @param rescuedByTrim allocations that succeeded after rung 2
 * @param synchronizeRuns times rung 3 ran
 * @param rescuedBySynchronize allocations that succeeded after rung 3
 * @param failures allocations that still failed: each threw an {@link OutOfDeviceMemoryException}
 * @param skippedInCapture allocations that did not climb because their thread had a capture open
 *     (a synchronizing call there would invalidate it); each threw an {@link OutOfDeviceMemoryException}
 */
public record OutOfMemoryCounters(long climbs, long retirementRuns, long retirementFrees, long rescuedByRetirement,
        long trimRuns, long trimmedBytes, long rescuedByTrim, long synchronizeRuns, long rescuedBySynchronize,
        long failures, long skippedInCapture) {
}
