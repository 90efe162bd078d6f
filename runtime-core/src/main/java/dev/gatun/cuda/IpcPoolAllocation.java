package dev.gatun.cuda;

import dev.gatun.cuda.internal.driver.IpcExportBytes;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * The {@link IpcBufferExport} of an allocation from a {@link MemoryPool} created with an export
 * handle: what another process needs to map it ({@link MemoryPool#importAllocation} on the pool
 * it imported from that pool's file descriptor): the driver's 64-byte {@code CUmemPoolPtrExportData} and the buffer's size. A
 * plain value: send {@link #toBytes()} over any channel and rebuild it with {@link #fromBytes}.
 * It grants nothing without the pool's file descriptor, and holds no resource.
 */
public final class IpcPoolAllocation implements IpcBufferExport {

    private final byte[] handle;
    private final long byteSize;

    IpcPoolAllocation(byte[] handle, long byteSize) {
        this.handle = handle;
        this.byteSize = byteSize;
    }

    /**
     * The export {@link #toBytes()} wrote.
     *
     * @param bytes the bytes the other process received
     * @return the export, to pass to {@link MemoryPool#importAllocation}
     * @throws IllegalArgumentException when {@code bytes} are not {@value IpcBufferExport#BYTES}
     *     bytes of this case, or name a size of 0 or less
     */
    public static IpcPoolAllocation fromBytes(byte[] bytes) {
        byte[] data = IpcExportBytes.driverBytes(bytes, IpcExportBytes.POOL_ALLOCATION, "IpcPoolAllocation");
        return new IpcPoolAllocation(data, IpcExportBytes.size(bytes));
    }

    @Override
    public byte[] toBytes() {
        return IpcExportBytes.encode(IpcExportBytes.POOL_ALLOCATION, handle, byteSize);
    }

    @Override
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
