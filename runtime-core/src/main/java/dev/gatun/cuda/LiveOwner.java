package dev.gatun.cuda;

import java.util.List;
import java.util.Objects;

/**
 * One owner made from a context and not yet closed, as {@link CudaContext#liveOwners()} lists
 * it: what a test names when it reports a leak.
 *
 * @param kind what it owns
 * @param id its number, unique in the process (the one in {@code identity})
 * @param identity what the owner's {@code toString()} says, e.g. {@code DeviceBuffer#12 (4096 bytes, device 0)}
 * @param allocationSite the stack of the thread that created it, innermost frame first (Gatun's own
 *     frames included)
 * @param borrowed whether it is a view of another library's handle ({@link CudaContext#borrowStream},
 *     {@link CudaContext#borrowDeviceMemory}, {@link CudaContext#borrowKernel}), which Gatun never frees
 */
public record LiveOwner(OwnerKind kind, long id, String identity, List<StackTraceElement> allocationSite,
        boolean borrowed) {

    public LiveOwner {
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(identity, "identity");
        allocationSite = List.copyOf(allocationSite);
    }
}
