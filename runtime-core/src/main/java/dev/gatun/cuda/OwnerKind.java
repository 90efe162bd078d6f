package dev.gatun.cuda;

/** The kinds of native owner Gatun counts (see {@link CudaContext#liveOwners(OwnerKind)}). */
public enum OwnerKind {
    STREAM, EVENT, DEVICE_BUFFER, PINNED_BUFFER, MODULE, KERNEL, GRAPH, GRAPH_EXEC,
    /** Pinned blocks the context holds for staging Java-heap copies; released at context close. */
    STAGING
}
