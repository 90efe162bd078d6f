package dev.gatun.cuda.internal.driver;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Objects;

/**
 * The byte form of an {@code IpcBufferExport} (the API's value encodes and decodes through it):
 * a kind byte, the driver's 64 bytes, the size (big-endian).
 */
public final class IpcExportBytes {

    public static final byte MEMORY_HANDLE = 1;
    public static final byte POOL_ALLOCATION = 2;
    /** {@code CU_IPC_HANDLE_SIZE} and {@code sizeof(CUmemPoolPtrExportData)}: both 64. */
    public static final int DRIVER_BYTES = IpcCalls.HANDLE_BYTES;
    public static final int BYTES = 1 + DRIVER_BYTES + Long.BYTES;

    static {
        if (MemoryPoolCalls.POINTER_EXPORT_BYTES != DRIVER_BYTES) {
            throw new AssertionError("the two export sizes differ"); // a bindings change would show here
        }
    }

    private IpcExportBytes() {
    }

    public static byte[] encode(byte kind, byte[] driverBytes, long size) {
        return ByteBuffer.allocate(BYTES).put(kind).put(driverBytes).putLong(size).array();
    }

    /**
     * The driver's bytes in {@code bytes}, checked to be an export of either kind and a positive size.
     *
     * @throws IllegalArgumentException otherwise
     */
    public static byte[] driverBytes(byte[] bytes) {
        Objects.requireNonNull(bytes, "bytes");
        if (bytes.length != BYTES || bytes[0] != MEMORY_HANDLE && bytes[0] != POOL_ALLOCATION) {
            throw new IllegalArgumentException("these " + bytes.length + " bytes are not an IpcBufferExport (" + BYTES
                    + " bytes from its toBytes(), the first " + MEMORY_HANDLE + " or " + POOL_ALLOCATION + ")");
        }
        if (size(bytes) <= 0) {
            throw new IllegalArgumentException("the export names a buffer of " + size(bytes)
                    + " bytes; these bytes did not come from IpcBufferExport.toBytes()");
        }
        return Arrays.copyOfRange(bytes, 1, 1 + DRIVER_BYTES);
    }

    public static long size(byte[] bytes) {
        return ByteBuffer.wrap(bytes, 1 + DRIVER_BYTES, Long.BYTES).getLong();
    }
}
