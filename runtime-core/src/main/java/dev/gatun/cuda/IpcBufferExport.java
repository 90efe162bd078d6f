package dev.gatun.cuda;

import dev.gatun.cuda.internal.driver.IpcExportBytes;
import java.util.Objects;

/**
 * What {@link DeviceBuffer#exportForIpc()} gives: the export of a buffer for another process,
 * one case per way the buffer was allocated. Import each case where it belongs:
 *
 * <ul>
 *   <li>{@link IpcMemoryHandle}, a {@link CudaContext#allocate} buffer (legacy IPC): with
 *       {@link CudaContext#importBuffer};
 *   <li>{@link IpcPoolAllocation}, an allocation from a {@link MemoryPool} created with an export
 *       handle: with {@link MemoryPool#importAllocation} on the pool imported from that pool's
 *       file descriptor ({@link CudaContext#importMemoryPool}).
 * </ul>
 *
 * <p>A plain value: {@link #toBytes()} ({@value #BYTES} bytes, the first naming the case) goes to
 * the other process by any channel, and {@link #fromBytes} there gives back the same case.
 */
public sealed interface IpcBufferExport permits IpcMemoryHandle, IpcPoolAllocation {

    /** The length of {@link #toBytes()}: the case, the driver's 64 bytes, the size as a big-endian long. */
    int BYTES = IpcExportBytes.BYTES;

    /** {@return the size of the exported buffer, which the imported one has too} */
    long byteSize();

    /** {@return the {@value #BYTES} bytes to send to the importing process} */
    byte[] toBytes();

    /**
     * The export {@link #toBytes()} wrote, of whichever case it is.
     *
     * @param bytes the bytes the other process received
     * @return the export, as an {@link IpcMemoryHandle} or an {@link IpcPoolAllocation}
     * @throws IllegalArgumentException when {@code bytes} did not come from {@link #toBytes()}
     */
    static IpcBufferExport fromBytes(byte[] bytes) {
        Objects.requireNonNull(bytes, "bytes");
        return bytes.length > 0 && bytes[0] == IpcExportBytes.POOL_ALLOCATION ? IpcPoolAllocation.fromBytes(bytes)
                : IpcMemoryHandle.fromBytes(bytes);
    }
}
