package dev.gatun.cuda.testing;

import static dev.gatun.cuda.testing.FakeDriverApi.INVALID_HANDLE;
import static dev.gatun.cuda.testing.FakeDriverApi.INVALID_VALUE;
import static dev.gatun.cuda.testing.FakeDriverApi.SUCCESS;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The simulated driver's interprocess sharing (legacy IPC). One simulated process plays both
 * sides, which the real driver refuses (it will not open a handle in the process that exported
 * it): a memory handle names an allocation's base, and opening it maps the same backing at a new
 * address; an event handle names an event, and opening it gives a new handle of the same event,
 * so records through either are seen through both.
 */
final class SimulatedIpc {

    /** The first 8 bytes of a simulated handle: what it names (the real handle is opaque). */
    private static final long MEMORY = 0x4d454d_4950_4353L;
    private static final long EVENT = 0x455654_4950_4353L;

    private final FakeDriverApi gpu;

    SimulatedIpc(FakeDriverApi gpu) {
        this.gpu = gpu;
    }

    public int cuIpcGetMemHandle(MemorySegment handle, long base) {
        SimulatedMemory.Allocation a = gpu.memory.device.get(base);
        if (a == null || a.mapped != null) {
            return INVALID_VALUE; // not the base of an allocation of this process
        }
        write(handle, MEMORY, base);
        return SUCCESS;
    }

    public int cuIpcOpenMemHandle_v2(MemorySegment out, MemorySegment handle, int flags) {
        SimulatedMemory.Allocation a = handle.get(ValueLayout.JAVA_LONG, 0) == MEMORY
                ? gpu.memory.device.get(handle.get(ValueLayout.JAVA_LONG, 8)) : null;
        if (a == null || a.mapped != null) {
            return INVALID_VALUE;
        }
        out.set(ValueLayout.JAVA_LONG, 0, gpu.memory.map(a, false).base);
        return SUCCESS;
    }

    public int cuIpcCloseMemHandle(long address) {
        SimulatedMemory.Allocation m = gpu.memory.device.get(address);
        return m != null && m.poolImport ? INVALID_VALUE : gpu.memory.unmap(address, "cuIpcCloseMemHandle");
    }

    public int cuIpcGetEventHandle(MemorySegment handle, MemorySegment event) {
        SimulatedStreams.Event e = gpu.streams.events.get(event.address());
        if (e == null) {
            return INVALID_HANDLE;
        }
        if (!e.interprocess) {
            return INVALID_VALUE;
        }
        write(handle, EVENT, event.address());
        return SUCCESS;
    }

    public int cuIpcOpenEventHandle(MemorySegment out, MemorySegment handle) {
        SimulatedStreams.Event e = handle.get(ValueLayout.JAVA_LONG, 0) == EVENT
                ? gpu.streams.events.get(handle.get(ValueLayout.JAVA_LONG, 8)) : null;
        if (e == null) {
            return INVALID_VALUE;
        }
        long h = gpu.newHandle();
        gpu.streams.events.put(h, e); // the same event: records through either handle show in both
        out.set(ValueLayout.JAVA_LONG, 0, h);
        return SUCCESS;
    }

    private static void write(MemorySegment handle, long kind, long value) {
        handle.fill((byte) 0);
        handle.set(ValueLayout.JAVA_LONG, 0, kind);
        handle.set(ValueLayout.JAVA_LONG, 8, value);
    }
}
