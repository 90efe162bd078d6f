package dev.gatun.cuda;

/**
 * A snapshot of one context's counters ({@link ContextDiagnostics#counters()}). Each counter is exact;
 * the snapshot is not taken atomically across counters while other threads allocate and free.
 *
 * @param syncAllocations device allocations made with cuMemAlloc
 * @param asyncAllocations stream-ordered allocations (cuMemAllocAsync)
 * @param syncFrees device frees with cuMemFree
 * @param asyncFrees stream-ordered frees (cuMemFreeAsync)
 * @param liveBytes device bytes that owners hold: allocated for a buffer and not yet freed, including
 *     those whose buffer is closed and awaiting retirement; back to its value before a run once
 *     everything the run allocated is closed and retired. Not the blocks the device pool keeps for
 *     reuse after their buffers were freed ({@code devicePoolRetainedBytes})
 * @param devicePoolRetainedBytes device bytes the device pool ({@link ContextDiagnostics#devicePool()}) keeps
 *     in its free lists for the next {@link CudaContext#allocate}: held from the driver, but by no owner;
 *     {@code devicePool().trim()} gives them back. With {@code liveBytes}, all the device memory
 *     the context holds through its allocations (not the arenas' and growable buffers' chunks)
 * @param hostToDeviceCopies copies host to device
 * @param hostToDeviceBytes their bytes
 * @param deviceToHostCopies copies device to host
 * @param deviceToHostBytes their bytes
 * @param deviceToDeviceCopies copies device to device
 * @param deviceToDeviceBytes their bytes
 * @param forcedSynchronizations stream, event or context synchronizations Gatun performed
 * @param pendingRetirements handles closed and waiting for their fences
 * @param completedRetirements handles freed
 * @param failedRetirements handles whose free failed repeatedly (logged, then given up)
 * @param abandonedRetirements handles left to the driver because a sticky error poisoned the
 *     context, which can free nothing more (one log line each)
 */
public record ContextCounters(long syncAllocations, long asyncAllocations, long syncFrees, long asyncFrees,
        long liveBytes, long devicePoolRetainedBytes, long hostToDeviceCopies, long hostToDeviceBytes,
        long deviceToHostCopies, long deviceToHostBytes, long deviceToDeviceCopies, long deviceToDeviceBytes, long forcedSynchronizations,
        long pendingRetirements, long completedRetirements, long failedRetirements,
        long abandonedRetirements) {
}
