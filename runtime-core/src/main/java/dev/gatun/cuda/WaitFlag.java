package dev.gatun.cuda;

import dev.gatun.cuda.bindings.driver.CudaDriver;

/** What a stream wait on a value does once its condition holds: the driver's wait flags besides the condition. */
public enum WaitFlag {
    /** Nothing more: later work on the stream may start. */
    DEFAULT(0),
    /**
     * {@code CU_STREAM_WAIT_VALUE_FLUSH}: remote writes made before the value (by a peer device or a
     * third-party device over RDMA) are flushed first, so later work sees them. Only on devices
     * that report {@link StreamMemOpSupport#flushRemoteWrites()}.
     */
    FLUSH(CudaDriver.CU_STREAM_WAIT_VALUE_FLUSH());

    final int bits;

    WaitFlag(int bits) {
        this.bits = bits;
    }
}
