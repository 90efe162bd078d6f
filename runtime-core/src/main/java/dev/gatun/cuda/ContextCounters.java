package dev.gatun.cuda;

/**
 * A snapshot of one context's counters ({@link CudaContext#counters()}).
 *
 * @param syncAllocations device allocations made with cuMemAlloc
 * @param asyncAllocations stream-ordered allocations (cuMemAllocAsync)
 * @param syncFrees device frees with cuMemFree
 * @param asyncFrees stream-ordered frees (cuMemFreeAsync)
 * @param bytesLive device bytes allocated and not yet freed (including those awaiting retirement)
 * @param hostToDeviceCopies copies host to device
 * @param hostToDeviceBytes their bytes
 * @param deviceToHostCopies copies device to host
 * @param deviceToHostBytes their bytes
 * @param deviceToDeviceCopies copies device to device
 * @param deviceToDeviceBytes their bytes
 * @param forcedSynchronizations stream, event or context synchronizations Gatun performed
 * @param retirementsPending handles closed and waiting for their fences
 * @param retirementsCompleted handles freed
 * @param retirementsFailed handles whose free failed repeatedly (logged, then given up)
 * @param retirementsAbandoned handles left to the driver because a sticky error poisoned the
 *     context, which can free nothing more (one log line each)
 */
public record ContextCounters(long syncAllocations, long asyncAllocations, long syncFrees, long asyncFrees,
        long bytesLive, long hostToDeviceCopies, long hostToDeviceBytes, long deviceToHostCopies,
        long deviceToHostBytes, long deviceToDeviceCopies, long deviceToDeviceBytes, long forcedSynchronizations,
        long retirementsPending, long retirementsCompleted, long retirementsFailed,
        long retirementsAbandoned) {
}
