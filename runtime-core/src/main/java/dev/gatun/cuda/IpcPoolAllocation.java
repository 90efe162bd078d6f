package dev.gatun.cuda;

import dev.gatun.cuda.internal.driver.MemoryPoolCalls;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Objects;

/**
 * What another process needs to map an allocation from an exported {@link MemoryPool} of this
 * one ({@link MemoryPool#exportAllocation}, then {@link MemoryPool#importAllocation} on the pool
 * imported there): the driver's 64-byte {@code CUmemPoolPtrExportData} and the buffer's size. A
 * plain value: send {@link #toBytes()} over any channel and rebuild it with {@link #fromBytes}.
 * It grants nothing without the pool's file descriptor, and holds no resource.
 */
public final class IpcPoolAllocation {

    /** The length of {@link #toBytes()}: the 64-byte export data, then the size as a big-endian long. */
    public static final int BYTES = MemoryPoolCalls.POINTER_EXPORT_BYTES + Long.BYTES;

    private final byte[] handle;
    private final long byteSize;

    IpcPoolAllocation(byte[] handle, long byteSize) {
        this.handle = handle;
        this.byteSize = byteSize;
    }

    /**
     * The handle {@link #toBytes()} wrote.
     *
     * @throws IllegalArgumentException when {@code bytes} is not {@value #BYTES} bytes or names a size of 0 or less
     */
    public static IpcPoolAllocation fromBytes(byte[] bytes) {
        Objects.requireNonNull(bytes, "bytes");
        if (bytes.length != BYTES) {
            throw new IllegalArgumentException("a pool allocation's export is " + BYTES + " bytes (IpcPoolAllocation.toBytes()), not "
                    + bytes.length);
        }
        long size = ByteBuffer.wrap(bytes, MemoryPoolCalls.POINTER_EXPORT_BYTES, Long.BYTES).getLong();
        if (size <= 0) {
            throw new IllegalArgumentException("the handle names a buffer of " + size
                    + " bytes; these bytes did not come from IpcPoolAllocation.toBytes()");
        }
        return new IpcPoolAllocation(Arrays.copyOf(bytes, MemoryPoolCalls.POINTER_EXPORT_BYTES), size);
    }

    /** The {@value #BYTES} bytes to send to the importing process. */
    public byte[] toBytes() {
        return ByteBuffer.allocate(BYTES).put(handle).putLong(byteSize).array();
    }

    /** The size of the exported buffer, which the imported one has too. */
    public long byteSize() {
        return byteSize;
    }

    /** The driver's export data, for {@code cuMemPoolImportPointer}. */
    byte[] driverHandle() {
        return handle;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof IpcPoolAllocation h && byteSize == h.byteSize && Arrays.equals(handle, h.handle);
    }

    @Override
    public int hashCode() {
        return 31 * Arrays.hashCode(handle) + Long.hashCode(byteSize);
    }

    @Override
    public String toString() {
        return "IpcPoolAllocation(" + byteSize + " bytes, " + HexFormat.of().formatHex(handle, 0, 8) + "...)";
    }
}
