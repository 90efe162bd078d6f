package dev.gatun.cuda.internal.driver;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Layer 2, devices: driver-level queries that belong to no context (count, handle, name,
 * attributes, memory, PCI id, peer capabilities), retaining a device's primary context, and
 * asking which device another library's context belongs to.
 * Each call names its operation once, owns its out-parameters and checks its result; errors
 * name the device these calls were made for, and poison nothing.
 */
public final class DeviceCalls {

    private static final String COUNT = "cuDeviceGetCount";
    private static final String GET = "cuDeviceGet";
    private static final String NAME = "cuDeviceGetName";
    private static final String PCI_BUS_ID = "cuDeviceGetPCIBusId";
    private static final String TOTAL_MEM = "cuDeviceTotalMem";
    private static final String ATTRIBUTE = "cuDeviceGetAttribute";
    private static final String CAN_ACCESS_PEER = "cuDeviceCanAccessPeer";
    private static final String P2P_ATTRIBUTE = "cuDeviceGetP2PAttribute";
    private static final String RETAIN_PRIMARY = "cuDevicePrimaryCtxRetain";
    private static final String CONTEXT_DEVICE = "cuCtxGetDevice";
    private static final String GET_CURRENT = "cuCtxGetCurrent";
    private static final String SET_CURRENT = "cuCtxSetCurrent";
    /** Room for the PCI bus id ("0000:00:06.0" and its NUL take 13 bytes). */
    private static final int PCI_BUS_ID_BYTES = 64;

    private final Checked c;

    private DeviceCalls(Checked c) {
        this.c = c;
    }

    /**
     * The calls for one device, or for none.
     *
     * @param device the ordinal errors name, or -1 for calls about no one device (the count)
     */
    public static DeviceCalls of(Driver driver, int device) {
        return new DeviceCalls(Checked.withoutContext(driver, device));
    }

    /** How many devices the driver reports. */
    public int count() {
        MemorySegment out = c.out();
        // Safety: out holds the int the driver writes.
        c.check(c.api.cuDeviceGetCount(out), COUNT);
        return out.get(ValueLayout.JAVA_INT, 0);
    }

    /** The handle ({@code CUdevice}) of the device with this ordinal. */
    public int get(int ordinal) {
        MemorySegment out = c.out();
        // Safety: out holds the CUdevice (an int) the driver writes; the driver checks the ordinal.
        int r = c.api.cuDeviceGet(out, ordinal);
        if (r != 0) {
            throw c.fail(r, GET + "(" + ordinal + ")");
        }
        return out.get(ValueLayout.JAVA_INT, 0);
    }

    /** The product name, e.g. {@code NVIDIA H200}. */
    public String name(int device) {
        MemorySegment out = c.out();
        // Safety: the driver writes a NUL-terminated name of at most OUT_BYTES bytes into out.
        c.check(c.api.cuDeviceGetName(out, Checked.OUT_BYTES, device), NAME);
        return out.getString(0);
    }

    /** The PCI bus id in the form {@code 0000:00:06.0}. */
    public String pciBusId(int device) {
        MemorySegment out = c.out();
        // Safety: the driver writes a NUL-terminated id of at most PCI_BUS_ID_BYTES bytes into out.
        c.check(c.api.cuDeviceGetPCIBusId(out, PCI_BUS_ID_BYTES, device), PCI_BUS_ID);
        return out.getString(0);
    }

    /** Total device memory in bytes. */
    public long totalMemory(int device) {
        MemorySegment out = c.out();
        // Safety: out holds the size_t the driver writes.
        c.check(c.api.cuDeviceTotalMem_v2(out, device), TOTAL_MEM);
        return out.get(ValueLayout.JAVA_LONG, 0);
    }

    /** One attribute ({@code CU_DEVICE_ATTRIBUTE_*}); the driver rejects unknown ones. */
    public int attribute(int device, int attribute) {
        MemorySegment out = c.out();
        // Safety: out holds the int the driver writes.
        int r = c.api.cuDeviceGetAttribute(out, attribute, device);
        if (r != 0) {
            throw c.fail(r, ATTRIBUTE + "(" + attribute + ")");
        }
        return out.get(ValueLayout.JAVA_INT, 0);
    }

    /** Whether {@code device} can access {@code peer}'s memory directly. */
    public boolean canAccessPeer(int device, int peer) {
        MemorySegment out = c.out();
        // Safety: out holds the int the driver writes.
        c.check(c.api.cuDeviceCanAccessPeer(out, device, peer), CAN_ACCESS_PEER);
        return out.get(ValueLayout.JAVA_INT, 0) != 0;
    }

    /** One attribute ({@code CU_DEVICE_P2P_ATTRIBUTE_*}) of the link from {@code source} to {@code destination}. */
    public int peerAttribute(int attribute, int source, int destination) {
        MemorySegment out = c.out();
        // Safety: out holds the int the driver writes.
        int r = c.api.cuDeviceGetP2PAttribute(out, attribute, source, destination);
        if (r != 0) {
            throw c.fail(r, P2P_ATTRIBUTE + "(" + attribute + ")");
        }
        return out.get(ValueLayout.JAVA_INT, 0);
    }

    /**
     * Retains the device's primary context ({@code CUcontext}). The caller never releases it:
     * releasing a primary context synchronizes the device and breaks other threads' captures.
     */
    public MemorySegment retainPrimaryContext(int device) {
        MemorySegment out = c.out();
        // Safety: out holds the CUcontext the driver writes.
        c.check(c.api.cuDevicePrimaryCtxRetain(out, device), RETAIN_PRIMARY);
        return MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
    }

    /**
     * The device ({@code CUdevice}) of {@code context}, a context another library made. The
     * driver answers only for the current context: this makes it current for the one query and
     * then restores the calling thread's current context, whatever it was.
     *
     * @throws dev.gatun.cuda.CudaException when the driver rejects the context
     */
    public int deviceOf(MemorySegment context) {
        MemorySegment out = c.out();
        // Safety: out holds the one CUcontext the driver writes.
        c.check(c.api.cuCtxGetCurrent(out), GET_CURRENT);
        MemorySegment saved = MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
        // Safety: the driver checks the handle; the thread's previous context is restored below.
        c.check(c.api.cuCtxSetCurrent(context), SET_CURRENT);
        // Safety: out holds the one CUdevice (an int) the driver writes for the current context.
        int r = c.api.cuCtxGetDevice(out);
        // Safety: saved was current on this thread a moment ago (or is NULL: none was).
        int restored = c.api.cuCtxSetCurrent(saved);
        c.check(r, CONTEXT_DEVICE); // the query's own error first: a failed restore never replaces it
        c.check(restored, SET_CURRENT);
        return out.get(ValueLayout.JAVA_INT, 0);
    }
}
