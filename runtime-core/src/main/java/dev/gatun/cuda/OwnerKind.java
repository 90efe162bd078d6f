package dev.gatun.cuda;

/** The kinds of native owner Gatun counts (see {@link CudaContext#liveOwners(OwnerKind)}). */
public enum OwnerKind {
    STREAM, EVENT, DEVICE_BUFFER, PINNED_BUFFER, MODULE, KERNEL, GRAPH, GRAPH_EXEC,
    /** Memory pools: those made with {@link CudaContext#createMemoryPool}, and each context's view of its device's default pool. */
    MEMORY_POOL,
    /**
     * Growable buffers ({@link CudaContext#reserveGrowable}); their {@link GrowableBuffer#mapped()}
     * views count as {@link #DEVICE_BUFFER}s until closed, shrunk below or their buffer closes.
     */
    GROWABLE_BUFFER,
    /** Pinned blocks the context holds for staging Java-heap copies; released at context close. */
    STAGING
}
