package dev.gatun.cuda;

/** The kinds of native owner Gatun counts (see {@link ContextDiagnostics#liveOwners(OwnerKind)}). */
public enum OwnerKind {
    /** Streams ({@link Stream}), the context's own two included. */
    STREAM,
    /** Events ({@link Event}). */
    EVENT,
    /** Device buffers ({@link DeviceBuffer}), whatever their memory came from. */
    DEVICE_BUFFER,
    /** Page-locked host buffers ({@link PinnedBuffer}). */
    PINNED_BUFFER,
    /** Loaded modules, held by the context's {@link ModuleRegistry} and by kernels and graphs. */
    MODULE,
    /** Kernels ({@link Kernel}). */
    KERNEL,
    /** Graphs ({@link Graph}), captured or built node by node. */
    GRAPH,
    /** Executable graphs ({@link GraphExec}). */
    GRAPH_EXEC,
    /** Memory pools: those made with {@link CudaContext#createMemoryPool}, and each context's view of its device's default pool. */
    MEMORY_POOL,
    /**
     * Growable buffers ({@link CudaContext#reserveGrowable}); their {@link GrowableBuffer#mapped()}
     * views count as {@link #DEVICE_BUFFER}s until closed, shrunk below or their buffer closes.
     */
    GROWABLE_BUFFER,
    /**
     * Kernel libraries ({@link KernelLibrary}), counted in the context that loaded them until closed;
     * their kernels in other contexts count there as {@link #KERNEL}s and {@link #MODULE}s.
     */
    LIBRARY,
    /** Pinned blocks the context holds for staging Java-heap copies; released at context close. */
    STAGING,
    /**
     * Java callbacks of host nodes ({@link Graph#addHost}) and of host functions queued on a stream
     * ({@link Stream#launchHostFunction}): each is live until no graph, executable or queued work
     * can run it any more.
     */
    HOST_CALLBACK
}
