package dev.gatun.cuda;

/**
 * Which stream memory operations a device supports, from {@code cuDeviceGetAttribute}. 32-bit
 * writes and waits with {@link WaitCondition#GEQ}, {@link WaitCondition#EQ} and
 * {@link WaitCondition#AND} need no attribute: every device a CUDA 12 driver runs supports them.
 * An attribute the driver fails to report counts as unsupported.
 *
 * @param values64 64-bit writes and waits ({@code CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS})
 * @param waitNor waits with {@link WaitCondition#NOR} ({@code CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR})
 * @param flushRemoteWrites waits with {@link WaitFlag#FLUSH} ({@code CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES})
 */
public record StreamMemOpSupport(boolean values64, boolean waitNor, boolean flushRemoteWrites) {
}
