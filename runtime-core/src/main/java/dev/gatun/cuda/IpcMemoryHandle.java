package dev.gatun.cuda;

import dev.gatun.cuda.internal.driver.IpcExportBytes;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * The {@link IpcBufferExport} of a {@link CudaContext#allocate} buffer (legacy IPC): what another
 * process needs to map it ({@link CudaContext#importBuffer} there): the
 * driver's opaque 64-byte {@code CUipcMemHandle} and the buffer's size. A plain value: send
 * {@link #toBytes()} over any channel (a socket, a pipe, a command line as hex) and rebuild it
 * with {@link #fromBytes}. It grants nothing by itself and holds no resource.
 */
public final class IpcMemoryHandle implements IpcBufferExport {

    private final byte[] handle;
    private final long byteSize;

    IpcMemoryHandle(byte[] handle, long byteSize) {
        this.handle = handle;
        this.byteSize = byteSize;
    }

    /**
     * The export {@link #toBytes()} wrote.
     *
     * @param bytes the bytes the other process received
     * @return the handle, to pass to {@link CudaContext#importBuffer}
     * @throws IllegalArgumentException when {@code bytes} are not {@value IpcBufferExport#BYTES}
     *     bytes of this case, or name a size of 0 or less
     */
    public static IpcMemoryHandle fromBytes(byte[] bytes) {
        byte[] handle = IpcExportBytes.driverBytes(bytes, IpcExportBytes.MEMORY_HANDLE, "IpcMemoryHandle");
        return new IpcMemoryHandle(handle, IpcExportBytes.size(bytes));
    }

    @Override
    public byte[] toBytes() {
        return IpcExportBytes.encode(IpcExportBytes.MEMORY_HANDLE, handle, byteSize);
    }

    @Override
    public long byteSize() {
        return byteSize;
    }

    /** The driver's handle, for {@code cuIpcOpenMemHandle}. */
    byte[] driverHandle() {
        return handle;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof IpcMemoryHandle h && byteSize == h.byteSize && Arrays.equals(handle, h.handle);
    }

    @Override
    public int hashCode() {
        return 31 * Arrays.hashCode(handle) + Long.hashCode(byteSize);
    }

    @Override
    public String toString() {
        return "IpcMemoryHandle(" + byteSize + " bytes, " + HexFormat.of().formatHex(handle, 0, 8) + "...)";
    }
}
