package dev.gatun.cuda;

import java.lang.foreign.MemorySegment;

/**
 * Work another CUDA library queues on a Gatun stream (a cuBLAS GEMM, a cuDNN operation, a kernel
 * of a native engine), handed to {@link Stream#submitForeign}. It is called once, under the
 * stream's lock, with the context current on the calling thread, and receives the raw
 * {@code CUstream} to pass to its library.
 *
 * <p>It may implement this interface once and be reused for every call (as the BLAS module's
 * prepared operations do), so that a warm submission allocates nothing.
 */
@FunctionalInterface
public interface ForeignWork {

    /**
     * Queues the work on {@code stream}. The contract of {@link Stream#submitForeign} applies:
     * touch only the device memory of the views submitted with it (or memory the library owns),
     * queue only on {@code stream}, make no synchronizing call, do not keep the handle, and call no
     * Gatun operation: it runs under the stream's lock, and Gatun operations take the context's
     * locks (another stream's, the counters' at a safe point such as {@code CudaContext.reap()})
     * in an order that must not start under a stream's lock, or two threads can deadlock.
     *
     * @param stream the stream's raw {@code CUstream}, valid for this call only
     */
    void queue(MemorySegment stream);
}
