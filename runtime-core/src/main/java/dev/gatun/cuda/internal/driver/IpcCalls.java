package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Layer 2, interprocess sharing (legacy IPC): the opaque {@value #HANDLE_BYTES}-byte handles
 * of device allocations and interprocess events, and opening them in another process. Handles
 * cross this layer as byte arrays; each call copies one into (or out of) its out block, so no
 * call allocates native memory.
 */
public final class IpcCalls {

    /** {@code CU_IPC_HANDLE_SIZE}: the bytes of a {@code CUipcMemHandle} or {@code CUipcEventHandle}. */
    public static final int HANDLE_BYTES = 64;

    private static final String GET_MEM = "cuIpcGetMemHandle";
    private static final String OPEN_MEM = "cuIpcOpenMemHandle";
    private static final String CLOSE_MEM = "cuIpcCloseMemHandle";
    private static final String GET_EVENT = "cuIpcGetEventHandle";
    private static final String OPEN_EVENT = "cuIpcOpenEventHandle";
    private static final int LAZY_PEER_ACCESS = CudaDriver.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS();
    /** Where a handle goes in the out block; the 8 bytes before it receive a pointer or event. */
    private static final long HANDLE = 8;

    static {
        if (CudaDriver.CU_IPC_HANDLE_SIZE() != HANDLE_BYTES || HANDLE + HANDLE_BYTES > Checked.OUT_BYTES) {
            throw new AssertionError("the IPC handle size changed"); // a bindings change would show here
        }
    }

    private final Checked c;

    IpcCalls(Checked c) {
        this.c = c;
    }

    /** The handle of a device allocation ({@code cuIpcGetMemHandle}). */
    public byte[] memoryHandle(long base) {
        c.current(GET_MEM);
        MemorySegment out = c.out();
        // Safety: out[HANDLE..) receives the 64-byte CUipcMemHandle; the caller passes the base of
        // a live cuMemAlloc allocation of this context.
        c.check(c.api.cuIpcGetMemHandle(out.asSlice(HANDLE, HANDLE_BYTES), base), GET_MEM);
        return out.asSlice(HANDLE, HANDLE_BYTES).toArray(ValueLayout.JAVA_BYTE);
    }

    /**
     * Maps another process's allocation into this context ({@code cuIpcOpenMemHandle_v2} with
     * {@code CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS}); may synchronize: call it inside the gate.
     *
     * @return the mapping's device address in this process
     */
    public long openMemory(byte[] handle) {
        c.current(OPEN_MEM);
        MemorySegment out = c.out();
        MemorySegment.copy(handle, 0, out, ValueLayout.JAVA_BYTE, HANDLE, HANDLE_BYTES);
        // Safety: out[0..8) receives the CUdeviceptr; out[HANDLE..) holds the 64-byte handle the
        // driver reads by value (an unknown handle is an error result, not a crash).
        c.check(c.api.cuIpcOpenMemHandle_v2(out, out.asSlice(HANDLE, HANDLE_BYTES), LAZY_PEER_ACCESS), OPEN_MEM);
        return out.get(ValueLayout.JAVA_LONG, 0);
    }

    /**
     * Unmaps memory opened with {@link #openMemory}; the raw result, for retirement (sticky
     * results still poison). Makes the context current first, as it acts on the current one.
     *
     * @param address a mapping no queued or future work in this process uses
     */
    public int closeMemory(long address) {
        int current = c.currentForRaw();
        if (current != 0) {
            return current;
        }
        // Safety: the caller's contract: the mapping's last use in this process has completed;
        // the context it was opened in is current on this carrier, made so just now.
        return c.observe(c.api.cuIpcCloseMemHandle(address), CLOSE_MEM);
    }

    /** The handle of an event created with {@code CU_EVENT_INTERPROCESS} ({@code cuIpcGetEventHandle}). */
    public byte[] eventHandle(MemorySegment event) {
        c.live(GET_EVENT);
        MemorySegment out = c.out();
        // Safety: out[HANDLE..) receives the 64-byte CUipcEventHandle; the caller passes a live
        // interprocess event of this context.
        c.check(c.api.cuIpcGetEventHandle(out.asSlice(HANDLE, HANDLE_BYTES), event), GET_EVENT);
        return out.asSlice(HANDLE, HANDLE_BYTES).toArray(ValueLayout.JAVA_BYTE);
    }

    /**
     * Opens another process's interprocess event in this context ({@code cuIpcOpenEventHandle}):
     * a new event handle of this process, timing disabled, freed with {@code cuEventDestroy}.
     */
    public MemorySegment openEvent(byte[] handle) {
        c.current(OPEN_EVENT);
        MemorySegment out = c.out();
        MemorySegment.copy(handle, 0, out, ValueLayout.JAVA_BYTE, HANDLE, HANDLE_BYTES);
        // Safety: out[0..8) receives the CUevent; out[HANDLE..) holds the 64-byte handle the
        // driver reads by value.
        c.check(c.api.cuIpcOpenEventHandle(out, out.asSlice(HANDLE, HANDLE_BYTES)), OPEN_EVENT);
        return MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
    }
}
