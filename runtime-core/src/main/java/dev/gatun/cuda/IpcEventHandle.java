package dev.gatun.cuda;

import dev.gatun.cuda.internal.driver.IpcCalls;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Objects;

/**
 * What another process needs to open an interprocess {@link Event} of this one
 * ({@link Event#exportForIpc()} of an event from {@link CudaContext#createInterprocessEvent()},
 * then {@link Event#importFrom} there): the driver's opaque 64-byte
 * {@code CUipcEventHandle}. A plain value: send {@link #toBytes()} over any channel and rebuild
 * it with {@link #fromBytes}. It holds no resource.
 */
public final class IpcEventHandle {

    /** The length of {@link #toBytes()}. */
    public static final int BYTES = IpcCalls.HANDLE_BYTES;

    private final byte[] handle;

    IpcEventHandle(byte[] handle) {
        this.handle = handle;
    }

    /**
     * The handle {@link #toBytes()} wrote.
     *
     * @param bytes the bytes the other process received
     * @return the handle, to pass to {@link Event#importFrom}
     * @throws IllegalArgumentException when {@code bytes} is not {@value #BYTES} bytes
     */
    public static IpcEventHandle fromBytes(byte[] bytes) {
        Objects.requireNonNull(bytes, "bytes");
        if (bytes.length != BYTES) {
            throw new IllegalArgumentException("an IPC event handle is " + BYTES + " bytes (IpcEventHandle.toBytes()), not "
                    + bytes.length);
        }
        return new IpcEventHandle(bytes.clone());
    }

    /** {@return the {@value #BYTES} bytes to send to the importing process} */
    public byte[] toBytes() {
        return handle.clone();
    }

    /** The driver's handle, for {@code cuIpcOpenEventHandle}. */
    byte[] driverHandle() {
        return handle;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof IpcEventHandle h && Arrays.equals(handle, h.handle);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(handle);
    }

    @Override
    public String toString() {
        return "IpcEventHandle(" + HexFormat.of().formatHex(handle, 0, 8) + "...)";
    }
}
