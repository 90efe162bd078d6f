package dev.gatun.cuda.internal.driver;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Objects;

/**
 * The byte form of an {@code IpcBufferExport} (the API's value types encode and decode through
 * it): a case byte, the driver's 64 bytes, the size (big-endian).
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
     * The driver's bytes in {@code bytes}, checked to be a {@code type} export of a positive size.
     *
     * @throws IllegalArgumentException otherwise
     */
    public static byte[] driverBytes(byte[] bytes, byte kind, String type) {
        Objects.requireNonNull(bytes, "bytes");
        if (bytes.length != BYTES || bytes[0] != kind) {
            throw new IllegalArgumentException("these " + bytes.length + " bytes are not an " + type + " (" + BYTES
                    + " bytes from its toBytes(), the first " + kind + "); IpcBufferExport.fromBytes reads either case");
        }
        if (size(bytes) <= 0) {
            throw new IllegalArgumentException("the export names a buffer of " + size(bytes)
                    + " bytes; these bytes did not come from " + type + ".toBytes()");
        }
        return Arrays.copyOfRange(bytes, 1, 1 + DRIVER_BYTES);
    }

    public static long size(byte[] bytes) {
        return ByteBuffer.wrap(bytes, 1 + DRIVER_BYTES, Long.BYTES).getLong();
    }
}
