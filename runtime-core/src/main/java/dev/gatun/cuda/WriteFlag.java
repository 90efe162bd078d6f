package dev.gatun.cuda;

import dev.gatun.cuda.bindings.driver.CudaDriver;

/**
 * How a stream write of a value ({@link StreamMemOps#write32}, {@link StreamMemOps#write64})
 * orders the stream's earlier writes: the driver's {@code CU_STREAM_WRITE_VALUE_*} flags that its
 * {@code _v2} entry points (the only ones CUDA 13 declares) accept. There is no
 * {@code NO_MEMORY_BARRIER}: the driver documents it as not supported in the v2 API, and the H200's
 * driver (580) refuses it ("Invalid flags 0x1"); every stream write has its barrier.
 */
public enum WriteFlag {
    /**
     * {@code CU_STREAM_WRITE_VALUE_DEFAULT}: the write has a memory barrier before it. Whoever
     * sees the value (the host polling a {@link MappedWord}, a kernel, another stream's wait) also
     * sees every write made earlier in this stream's order, kernels' included.
     */
    DEFAULT(CudaDriver.CU_STREAM_WRITE_VALUE_DEFAULT());

    final int bits;

    WriteFlag(int bits) {
        this.bits = bits;
    }
}
