package dev.gatun.cuda;

import dev.gatun.cuda.internal.driver.IpcExportBytes;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * What {@link DeviceBuffer#exportForIpc()} gives: what another process needs to map the buffer,
 * as a plain value. Its {@link #kind()} says how the buffer was allocated, and so where the
 * other process imports it:
 *
 * <ul>
 *   <li>{@link Kind#MEMORY_HANDLE}, a {@link CudaContext#allocate} buffer (legacy IPC, the driver's
 *       {@code CUipcMemHandle}): with {@link DeviceBuffer#importFrom};
 *   <li>{@link Kind#POOL_ALLOCATION}, an allocation from a {@link MemoryPool} created with an
 *       export handle (the driver's {@code CUmemPoolPtrExportData}): with
 *       {@link MemoryPool#importAllocation} on the pool imported from that pool's file descriptor
 *       ({@link MemoryPool#importFrom}).
 * </ul>
 *
 * <p>{@link #toBytes()} ({@value #BYTES} bytes: the kind, the driver's 64 bytes, the size) goes to
 * the other process by any channel (a socket, a pipe, a command line as hex), and
 * {@link #fromBytes} there gives back the same export. It grants nothing by itself (a pool
 * allocation's, nothing without the pool's descriptor) and holds no resource. Not a record: its
 * driver bytes are an array, which it copies in and out and compares by content.
 */
public final class IpcBufferExport {

    /** The length of {@link #toBytes()}: the kind, the driver's 64 bytes, the size as a big-endian long. */
    public static final int BYTES = IpcExportBytes.BYTES;

    /** How the exported buffer was allocated, which says where the other process imports it. */
    public enum Kind {
        /** A {@link CudaContext#allocate} buffer ({@code cuIpcGetMemHandle}), imported with {@link DeviceBuffer#importFrom}. */
        MEMORY_HANDLE(IpcExportBytes.MEMORY_HANDLE),
        /** A {@link MemoryPool} allocation ({@code cuMemPoolExportPointer}), imported with {@link MemoryPool#importAllocation}. */
        POOL_ALLOCATION(IpcExportBytes.POOL_ALLOCATION);

        final byte code;

        Kind(byte code) {
            this.code = code;
        }
    }

    private final Kind kind;
    private final byte[] driverBytes;
    private final long byteSize;

    IpcBufferExport(Kind kind, byte[] driverBytes, long byteSize) {
        this.kind = kind;
        this.driverBytes = driverBytes;
        this.byteSize = byteSize;
    }

    /**
     * The export {@link #toBytes()} wrote.
     *
     * @param bytes the bytes the other process received
     * @return the export, of the kind it was written with
     * @throws IllegalArgumentException when {@code bytes} did not come from {@link #toBytes()}: not
     *     {@value #BYTES} bytes, of no kind, or naming a size of 0 or less
     */
    public static IpcBufferExport fromBytes(byte[] bytes) {
        byte[] driverBytes = IpcExportBytes.driverBytes(bytes);
        Kind kind = bytes[0] == Kind.POOL_ALLOCATION.code ? Kind.POOL_ALLOCATION : Kind.MEMORY_HANDLE;
        return new IpcBufferExport(kind, driverBytes, IpcExportBytes.size(bytes));
    }

    /** {@return how the exported buffer was allocated, which says where to import it} */
    public Kind kind() {
        return kind;
    }

    /** {@return the size of the exported buffer, which the imported one has too} */
    public long byteSize() {
        return byteSize;
    }

    /** {@return the {@value #BYTES} bytes to send to the importing process} */
    public byte[] toBytes() {
        return IpcExportBytes.encode(kind.code, driverBytes, byteSize);
    }

    /** The driver's 64 bytes, for {@code cuIpcOpenMemHandle} or {@code cuMemPoolImportPointer}. */
    byte[] driverBytes() {
        return driverBytes;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof IpcBufferExport e && kind == e.kind && byteSize == e.byteSize
                && Arrays.equals(driverBytes, e.driverBytes);
    }

    @Override
    public int hashCode() {
        return (31 * kind.hashCode() + Arrays.hashCode(driverBytes)) * 31 + Long.hashCode(byteSize);
    }

    @Override
    public String toString() {
        return "IpcBufferExport(" + kind + ", " + byteSize + " bytes, " + HexFormat.of().formatHex(driverBytes, 0, 8)
                + "...)";
    }
}
