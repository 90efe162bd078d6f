package dev.gatun.cuda;

import dev.gatun.cuda.internal.driver.IpcCalls;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Objects;

/**
 * What another process needs to map a {@link DeviceBuffer} of this one
 * ({@link DeviceBuffer#exportForIpc()}, then {@link CudaContext#importBuffer} there): the
 * driver's opaque 64-byte {@code CUipcMemHandle} and the buffer's size. A plain value: send
 * {@link #toBytes()} over any channel (a socket, a pipe, a command line as hex) and rebuild it
 * with {@link #fromBytes}. It grants nothing by itself and holds no resource.
 */
public final class IpcMemoryHandle {

    /** The length of {@link #toBytes()}: the 64-byte handle, then the size as a big-endian long. */
    public static final int BYTES = IpcCalls.HANDLE_BYTES + Long.BYTES;

    private final byte[] handle;
    private final long byteSize;

    IpcMemoryHandle(byte[] handle, long byteSize) {
        this.handle = handle;
        this.byteSize = byteSize;
    }

    /**
     * The handle {@link #toBytes()} wrote.
     *
     * @throws IllegalArgumentException when {@code bytes} is not {@value #BYTES} bytes or names a size of 0 or less
     */
    public static IpcMemoryHandle fromBytes(byte[] bytes) {
        Objects.requireNonNull(bytes, "bytes");
        if (bytes.length != BYTES) {
            throw new IllegalArgumentException("an IPC memory handle is " + BYTES + " bytes (IpcMemoryHandle.toBytes()), not "
                    + bytes.length);
        }
        long size = ByteBuffer.wrap(bytes, IpcCalls.HANDLE_BYTES, Long.BYTES).getLong();
        if (size <= 0) {
            throw new IllegalArgumentException("the handle names a buffer of " + size
                    + " bytes; these bytes did not come from IpcMemoryHandle.toBytes()");
        }
        return new IpcMemoryHandle(Arrays.copyOf(bytes, IpcCalls.HANDLE_BYTES), size);
    }

    /** The {@value #BYTES} bytes to send to the importing process. */
    public byte[] toBytes() {
        return ByteBuffer.allocate(BYTES).put(handle).putLong(byteSize).array();
    }

    /** The size of the exported buffer, which the imported one has too. */
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
