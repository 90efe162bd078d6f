package dev.gatun.cuda;

/**
 * An allocation failed with {@code CUDA_ERROR_OUT_OF_MEMORY} after Gatun's out-of-memory ladder
 * (freeing what retirement could, trimming pools, synchronizing) could not make room, or was over
 * a pool's hard cap ({@link DevicePoolOptions#hardCapBytes}, {@link MemoryPoolOptions#hardCapBytes}).
 * Thrown for device memory of every kind, for pinned host memory, for a growable buffer's chunks
 * and for instantiating a graph with memory nodes. It is a {@link CudaException} whose
 * {@link #result()} is {@code CUDA_ERROR_OUT_OF_MEMORY}, so code that catches that keeps working;
 * its {@link #report()} (also in its message) says where the memory is.
 *
 * <p>What to do: close buffers no longer needed (a closed buffer is freed once its last GPU use
 * completed), allocate less, lower what pools keep ({@link DevicePoolOptions#maxRetainedBytes},
 * {@link MemoryPool#setReleaseThresholdBytes}) or raise a cap. With leak tracking on, the report lists
 * the largest live allocations and where they were made.
 */
public final class OutOfDeviceMemoryException extends CudaException {
    private static final long serialVersionUID = 1L;

    /** The bytes the failed allocation asked for; 0 where the driver decides. */
    private final long requestedBytes;
    private final transient MemoryReport report;

    /**
     * Restates the last out-of-memory failure of an allocation, with where the memory was.
     *
     * @param failure the last out-of-memory failure of the allocation, kept as the cause
     * @param what the allocation, e.g. {@code "stream-ordered allocation of 1048576 bytes"}
     * @param requestedBytes the bytes asked for (0 where the driver decides, as for an instantiation)
     * @param report where the memory was when it failed
     */
    public OutOfDeviceMemoryException(CudaException failure, String what, long requestedBytes, MemoryReport report) {
        super(failure.result(), failure.resultName(), failure.description(), failure.operation() + " (" + what + ")",
                failure.device().orElse(-1), failure.driverLog(), failure);
        this.requestedBytes = requestedBytes;
        this.report = report;
    }

    /** {@return the bytes the failed allocation asked for; 0 where the driver decides (a graph's instantiation)} */
    public long requestedBytes() {
        return requestedBytes;
    }

    /** {@return where the memory was when the allocation finally failed} */
    public MemoryReport report() {
        return report;
    }

    @Override
    public String getMessage() {
        return super.getMessage() + ". Close buffers no longer needed, allocate less, or lower what pools keep; "
                + "open the context with leak tracking to list the largest allocations and their sites\n" + report;
    }
}
