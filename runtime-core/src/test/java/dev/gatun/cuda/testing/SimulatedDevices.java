package dev.gatun.cuda.testing;

import static dev.gatun.cuda.testing.FakeDriverApi.INVALID_VALUE;
import static dev.gatun.cuda.testing.FakeDriverApi.SUCCESS;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * The simulated driver's initialization, version, error strings, devices and contexts. Each
 * device is an H100-like GPU unless a test sets its attributes; its primary context handle is
 * derived from its ordinal.
 */
final class SimulatedDevices {

    private final FakeDriverApi gpu;

    // Configuration, set through FakeDriverApi's controls.
    int version = 13000;
    int initResult = SUCCESS;
    int deviceCount = 1;
    final Map<Integer, Integer> attributes = new HashMap<>();
    final Set<Integer> failingAttributes = new HashSet<>();
    final Set<String> missingSymbols = new HashSet<>();
    final long totalMemory = 141L << 30;

    private final Map<Integer, MemorySegment> errorStrings = new HashMap<>();
    int retainedContexts;
    /** Contexts another library created (cuCtxCreate), by handle: their device ordinals. */
    private final Map<Long, Integer> foreignContexts = new HashMap<>();
    private long nextForeignContext = 0xF0_0000L;

    SimulatedDevices(FakeDriverApi gpu) {
        this.gpu = gpu;
    }

    public boolean hasSymbol(String name) {
        return !missingSymbols.contains(name);
    }

    public int cuInit(int flags) {
        return initResult;
    }

    public int cuDriverGetVersion(MemorySegment out) {
        out.set(ValueLayout.JAVA_INT, 0, version);
        return SUCCESS;
    }

    public int cuGetErrorString(int error, MemorySegment out) {
        return errorText(error, out, "simulated driver error " + error);
    }

    private int errorText(int error, MemorySegment out, String text) {
        MemorySegment s = errorStrings.computeIfAbsent(error, e -> gpu.arena.allocateFrom(text));
        out.set(ValueLayout.ADDRESS, 0, s);
        return SUCCESS;
    }

    // ---- devices ----

    public int cuDeviceGetCount(MemorySegment count) {
        count.set(ValueLayout.JAVA_INT, 0, deviceCount);
        return SUCCESS;
    }

    public int cuDeviceGet(MemorySegment out, int ordinal) {
        if (ordinal < 0 || ordinal >= deviceCount) {
            return CudaDriver.CUDA_ERROR_INVALID_DEVICE();
        }
        out.set(ValueLayout.JAVA_INT, 0, ordinal);
        return SUCCESS;
    }

    public int cuDeviceGetName(MemorySegment name, int len, int dev) {
        name.reinterpret(len).setString(0, "Simulated GPU " + dev);
        return SUCCESS;
    }

    public int cuDeviceGetAttribute(MemorySegment pi, int attrib, int dev) {
        if (failingAttributes.contains(attrib)) {
            gpu.logs.refused("cuDeviceGetAttribute", "attrib " + attrib + " is not an attribute this device reports");
            return INVALID_VALUE;
        }
        pi.set(ValueLayout.JAVA_INT, 0, attributes.getOrDefault(attrib, defaultAttribute(attrib)));
        return SUCCESS;
    }

    /** What every simulated device reports for an attribute no test set. */
    static int defaultAttribute(int attribute) {
        if (attribute == CudaDriver.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR()) {
            return 9;
        } else if (attribute == CudaDriver.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT()) {
            return 132;
        } else if (attribute == CudaDriver.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK()) {
            return 1024;
        } else if (attribute == CudaDriver.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X()) {
            return Integer.MAX_VALUE;
        } else if (attribute == CudaDriver.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK()) {
            return 48 * 1024;
        } else if (attribute == CudaDriver.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN()) {
            return 227 * 1024;
        } else if (attribute == CudaDriver.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE()) {
            return 60 << 20;
        } else if (attribute == CudaDriver.CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED()) {
            return 1;
        }
        return 0;
    }

    public int cuDeviceTotalMem_v2(MemorySegment bytes, int dev) {
        bytes.set(ValueLayout.JAVA_LONG, 0, totalMemory);
        return SUCCESS;
    }

    public int cuDeviceGetPCIBusId(MemorySegment out, int len, int dev) {
        out.reinterpret(len).setString(0, String.format("0000:%02x:00.0", dev + 6));
        return SUCCESS;
    }

    public int cuDeviceCanAccessPeer(MemorySegment canAccessPeer, int dev, int peerDev) {
        canAccessPeer.set(ValueLayout.JAVA_INT, 0, dev != peerDev ? 1 : 0);
        return SUCCESS;
    }

    public int cuDeviceGetP2PAttribute(MemorySegment value, int attrib, int srcDevice, int dstDevice) {
        value.set(ValueLayout.JAVA_INT, 0, 1);
        return SUCCESS;
    }

    // ---- contexts ----

    public int cuDevicePrimaryCtxRetain(MemorySegment pctx, int dev) {
        retainedContexts++;
        pctx.set(ValueLayout.JAVA_LONG, 0, 0xC0_0000L + dev);
        return SUCCESS;
    }

    /** A context another library created on {@code device}: not the device's primary context. */
    long createForeignContext(int device) {
        long h = nextForeignContext++;
        foreignContexts.put(h, device);
        return h;
    }

    /** Forgets a context made with {@link #createForeignContext} (a green context's, destroyed). */
    void destroyForeignContext(long context) {
        foreignContexts.remove(context);
    }

    /** The device of a context (primary or foreign), or -1 when there is no such context. */
    int deviceOf(long context) {
        Integer foreign = foreignContexts.get(context);
        if (foreign != null) {
            return foreign;
        }
        long ordinal = context - 0xC0_0000L;
        return ordinal >= 0 && ordinal < deviceCount ? (int) ordinal : -1;
    }

    public int cuCtxGetDevice(MemorySegment device) {
        int d = deviceOf(gpu.contexts.current());
        if (d < 0) {
            return CudaDriver.CUDA_ERROR_INVALID_CONTEXT();
        }
        device.set(ValueLayout.JAVA_INT, 0, d);
        return SUCCESS;
    }

    /** Waits for every stream of the current context (not other contexts', which the driver leaves running). */
    public int cuCtxSynchronize() {
        gpu.streams.finishContext(gpu.contexts.current());
        return SUCCESS;
    }

    public int cuCtxGetStreamPriorityRange(MemorySegment least, MemorySegment greatest) {
        least.set(ValueLayout.JAVA_INT, 0, 0);
        greatest.set(ValueLayout.JAVA_INT, 0, -5);
        return SUCCESS;
    }

    public int cuCtxEnablePeerAccess(MemorySegment peerContext, int flags) {
        return SUCCESS;
    }
}
