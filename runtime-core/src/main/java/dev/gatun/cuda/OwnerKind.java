package dev.gatun.cuda;

/** The kinds of native owner Gatun counts (see {@link CudaContext#liveOwners(OwnerKind)}). */
public enum OwnerKind {
    STREAM, EVENT, DEVICE_BUFFER, PINNED_BUFFER, MODULE, KERNEL, GRAPH, GRAPH_EXEC,
    /** Memory pools: those made with {@link CudaContext#createMemoryPool}, and each context's view of its device's default pool. */
    MEMORY_POOL,
    /** Pinned blocks the context holds for staging Java-heap copies; released at context close. */
    STAGING
}
