package dev.gatun.cuda.internal.memory;

/** The kinds of allocation that climb the out-of-memory ladder, as reports and events name them. */
public enum AllocationKind {
    /** A block of Gatun's device pool ({@code cuMemAlloc} on a miss, or the pool's hard cap). */
    DEVICE_POOL("device pool block"),
    /** {@code Stream.allocate} ({@code cuMemAllocAsync}). */
    STREAM_ORDERED("stream-ordered allocation"),
    /** {@code MemoryPool.allocate} ({@code cuMemAllocFromPoolAsync}, or the pool's hard cap). */
    POOL("memory pool allocation"),
    /** {@code CudaContext.allocatePinned} ({@code cuMemHostAlloc}). */
    PINNED("pinned host allocation"),
    /** A growable buffer's growth: its chunks ({@code cuMemCreate}, {@code cuMemMap}, {@code cuMemSetAccess}). */
    GROWABLE("growable buffer growth"),
    /** {@code Graph.instantiate} of a graph with memory nodes ({@code cuGraphInstantiateWithFlags}). */
    GRAPH_INSTANTIATE("instantiation of a graph with memory nodes");

    private final String words;

    AllocationKind(String words) {
        this.words = words;
    }

    /** The allocation in words, with its size when it has one (a growth's is the size it grows to). */
    String describe(long bytes) {
        return bytes <= 0 ? words : words + (this == GROWABLE ? " to " : " of ") + bytes + " bytes";
    }

    @Override
    public String toString() {
        return words;
    }
}
