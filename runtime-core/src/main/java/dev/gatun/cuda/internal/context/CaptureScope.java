package dev.gatun.cuda.internal.context;

/**
 * What a Gatun-managed stream capture keeps of the owners its captured work uses. A captured
 * graph bakes in module handles and buffer addresses, so those owners must outlive every
 * launch of the graph, even if the user closes them meanwhile: the scope {@linkplain
 * NativeResource#hold() holds} each one it admits, and its graph releases the holds once its
 * last launch has completed.
 */
public interface CaptureScope {

    /**
     * Called when work using {@code resource} is queued on the capturing stream. Holds it, or
     * refuses it (a buffer not registered with the capture) by throwing before anything is
     * queued.
     */
    void admit(NativeResource resource);

    /** The allocations made on the capturing stream during this capture (graph allocations). */
    GraphAllocations allocations();
}
