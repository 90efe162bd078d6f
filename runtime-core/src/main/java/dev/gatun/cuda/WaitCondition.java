package dev.gatun.cuda;

import dev.gatun.cuda.bindings.driver.CudaDriver;

/**
 * What a stream wait on a value ({@link StreamMemOps#wait32}, {@link StreamMemOps#wait64})
 * waits for: the driver's {@code CU_STREAM_WAIT_VALUE_*} conditions, with {@code word} the
 * word's current contents and {@code value} the operand. 32-bit comparisons are unsigned;
 * {@link #GEQ} is cyclic (the driver compares {@code (int) (word - value) >= 0}), so a counter
 * may wrap.
 */
public enum WaitCondition {
    /** {@code CU_STREAM_WAIT_VALUE_GEQ}: until {@code (int) (word - value) >= 0} (cyclic; 64-bit likewise). */
    GEQ(CudaDriver.CU_STREAM_WAIT_VALUE_GEQ()),
    /** {@code CU_STREAM_WAIT_VALUE_EQ}: until {@code word == value}. */
    EQ(CudaDriver.CU_STREAM_WAIT_VALUE_EQ()),
    /** {@code CU_STREAM_WAIT_VALUE_AND}: until {@code (word & value) != 0}. */
    AND(CudaDriver.CU_STREAM_WAIT_VALUE_AND()),
    /**
     * {@code CU_STREAM_WAIT_VALUE_NOR}: until {@code ~(word | value) != 0}. Only on devices that
     * report {@link StreamMemOpSupport#waitNor()}.
     */
    NOR(CudaDriver.CU_STREAM_WAIT_VALUE_NOR());

    final int bits;

    WaitCondition(int bits) {
        this.bits = bits;
    }
}
