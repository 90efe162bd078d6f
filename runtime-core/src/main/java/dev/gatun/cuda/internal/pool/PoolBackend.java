package dev.gatun.cuda.internal.pool;

/**
 * The native side of the device pool: real allocations and frees on the pool's context. The
 * pool calls it only on a miss, on a release it will not keep, and on a trim; never on a hit.
 * Each call may synchronize the device: {@link #allocate} enters its context's synchronizing
 * section itself; {@link #free} runs inside its caller's (retirement's, a trim's), which holds one
 * for all the frees it makes, so a free takes no section of its own.
 */
public interface PoolBackend {

    /**
     * Allocates exactly {@code bytes} (the class size, or the request for one too large to pool).
     *
     * @return the device address, never 0
     * @throws dev.gatun.cuda.CudaException on failure; with {@code CUDA_ERROR_OUT_OF_MEMORY} the
     *     pool returns what it holds to the driver and tries once more
     */
    long allocate(long bytes);

    /**
     * Frees a block this backend allocated, whose every use has completed, inside the caller's
     * synchronizing section of the capture gate. Report a driver
     * failure as the CUresult, not as an exception: a release runs inside the retirement queue,
     * which retries on a nonzero result but does not expect exceptions. (Trim tolerates one: it
     * keeps the block pooled and lets the exception through.)
     *
     * @param bytes the size it was allocated with, for the backend's accounting
     * @return the CUresult; 0 when freed
     */
    int free(long address, long bytes);
}
