package dev.gatun.cuda;

import dev.gatun.cuda.bindings.driver.CudaDriver;

/**
 * How a stream write of a value ({@link StreamMemOps#write32}, {@link StreamMemOps#write64})
 * orders the stream's earlier writes: the driver's {@code CU_STREAM_WRITE_VALUE_*} flags.
 */
public enum WriteFlag {
    /**
     * {@code CU_STREAM_WRITE_VALUE_DEFAULT}: the write has a memory barrier before it. Whoever
     * sees the value (the host polling a {@link MappedWord}, a kernel, another stream's wait) also
     * sees every write made earlier in this stream's order, kernels' included.
     */
    DEFAULT(CudaDriver.CU_STREAM_WRITE_VALUE_DEFAULT()),
    /**
     * {@code CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER}: the write is only ordered after the earlier
     * work's completion, without a barrier: a reader that sees the value may still see older
     * contents of memory the earlier work wrote. Use it for a value that orders nothing else.
     */
    NO_MEMORY_BARRIER(CudaDriver.CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER());

    final int bits;

    WriteFlag(int bits) {
        this.bits = bits;
    }
}
