package dev.gatun.cuda.testing;

import static dev.gatun.cuda.testing.FakeDriverApi.INVALID_VALUE;
import static dev.gatun.cuda.testing.FakeDriverApi.SUCCESS;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.driver.DriverFunction;
import dev.gatun.cuda.internal.driver.EntryPoints;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * The simulated driver's initialization, version, entry points, error strings, devices and
 * contexts. Each device is an H100-like GPU unless a test sets its attributes; its primary context
 * handle is derived from its ordinal.
 *
 * <p>The driver has the entry points of {@link DriverFunction} no newer than the version it
 * reports, less those a test hid ({@link FakeDriverApi#withoutSymbol}): its
 * {@code cuGetProcAddress_v2} answers for the others as a real driver of that version does, and a
 * call of one fails, before anything else, as {@code NativeDriverApi}'s first call of a function
 * the driver lacks does ({@link #bind}).
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

    /** The functions a call has found (a real driver's entry point, once bound, stays bound). */
    private final Set<DriverFunction> bound = EnumSet.noneOf(DriverFunction.class);
    private final Map<Integer, MemorySegment> errorStrings = new HashMap<>();
    int retainedContexts;
    /** Contexts another library created (cuCtxCreate), by handle: their device ordinals. */
    private final Map<Long, Integer> foreignContexts = new HashMap<>();
    private long nextForeignContext = 0xF0_0000L;

    SimulatedDevices(FakeDriverApi gpu) {
        this.gpu = gpu;
    }

    /**
     * Before every call of {@code function}: finds its entry point, as {@code NativeDriverApi}'s
     * first call does, through this driver's {@link #cuGetProcAddress_v2} (so one that is newer
     * than the version, or hidden, throws {@link dev.gatun.cuda.DriverTooOldException}).
     */
    void bind(String function) {
        DriverFunction f = DriverFunction.valueOf(function);
        if (!f.byName() && !bound.contains(f)) {
            EntryPoints.resolve(this::cuGetProcAddress_v2, version, f);
            bound.add(f);
        }
    }

    /**
     * As the driver documents it: a version newer than the driver's is {@code CUDA_ERROR_INVALID_VALUE};
     * a name the driver does not know (no variant at or below its version, or hidden) is
     * {@code CUDA_ERROR_NOT_FOUND} with {@code CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND}; a version older
     * than every variant it has answers {@code CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT} and no
     * address; else the newest variant at or below the version asked. Gatun asks only for the
     * legacy-stream variants; anything else is a violation.
     */
    public int cuGetProcAddress_v2(MemorySegment symbol, MemorySegment pfn, int cudaVersion, long flags,
            MemorySegment symbolStatus) {
        pfn.set(ValueLayout.ADDRESS, 0, MemorySegment.NULL);
        if (flags != EntryPoints.LEGACY_STREAM) {
            gpu.violations.add("cuGetProcAddress_v2 asked with flags " + flags + ", not the legacy-stream variants");
            return INVALID_VALUE;
        }
        if (cudaVersion > version) {
            return INVALID_VALUE;
        }
        String name = symbol.getString(0);
        DriverFunction found = null;
        boolean known = false;
        for (DriverFunction f : DriverFunction.values()) {
            if (!f.byName() && f.symbol().equals(name) && f.version() <= version && !missingSymbols.contains(f.name())) {
                known = true;
                if (f.version() <= cudaVersion && (found == null || f.version() > found.version())) {
                    found = f;
                }
            }
        }
        if (!known) {
            symbolStatus.set(ValueLayout.JAVA_INT, 0, CudaDriver.CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND());
            return CudaDriver.CUDA_ERROR_NOT_FOUND();
        }
        if (found == null) {
            symbolStatus.set(ValueLayout.JAVA_INT, 0, CudaDriver.CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT());
            return SUCCESS;
        }
        // An address no one calls: the simulated driver's functions are reached through its proxy.
        pfn.set(ValueLayout.ADDRESS, 0, MemorySegment.ofAddress(0xE000_0000L + 16L * found.ordinal()));
        symbolStatus.set(ValueLayout.JAVA_INT, 0, CudaDriver.CU_GET_PROC_ADDRESS_SUCCESS());
        return SUCCESS;
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
