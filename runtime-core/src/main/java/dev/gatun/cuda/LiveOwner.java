package dev.gatun.cuda;

import java.util.List;
import java.util.Objects;

/**
 * One owner made from a context and not yet closed, as {@link ContextDiagnostics#liveOwners()} lists
 * it: what a test names when it reports a leak.
 *
 * @param kind what it owns
 * @param id its number, unique in the process (the one in {@code identity})
 * @param identity what the owner's {@code toString()} says, e.g. {@code DeviceBuffer#12 (4096 bytes, device 0)}
 * @param allocationSite the stack of the thread that created it, innermost frame first (Gatun's own
 *     frames included)
 * @param borrowed whether it is borrowed, which means one thing for every kind of owner: what
 *     it stands for (device memory, a stream, a module and its kernels) was made outside Gatun, by
 *     another library or another process, and Gatun never frees, destroys or unloads it; closing
 *     the owner releases only Gatun's view of it, or this process's mapping. Borrowed are another
 *     library's stream, device memory and kernel with its module ({@link Stream#borrow},
 *     {@link DeviceBuffer#borrow}, {@link Kernel#borrow}: the close
 *     releases nothing native), and another process's buffer mapped into this one
 *     ({@link DeviceBuffer#importFrom}, {@link MemoryPool#importAllocation}: the close unmaps or
 *     frees the mapping, never the memory). An imported event or memory pool is not: the driver
 *     makes it a new handle of this process ({@code cuIpcOpenEventHandle},
 *     {@code cuMemPoolImportFromShareableHandle}), which Gatun destroys like its own, leaving the
 *     exporter's alone
 */
public record LiveOwner(OwnerKind kind, long id, String identity, List<StackTraceElement> allocationSite,
        boolean borrowed) {

    /**
     * Checks the components and copies the allocation site.
     *
     * @throws NullPointerException when {@code kind} or {@code identity} is null
     */
    public LiveOwner {
        Objects.requireNonNull(kind, "kind");
        Objects.requireNonNull(identity, "identity");
        allocationSite = List.copyOf(allocationSite);
    }
}
