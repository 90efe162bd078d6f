package dev.gatun.cuda.testing;

import static dev.gatun.cuda.testing.FakeDriverApi.INVALID_HANDLE;
import static dev.gatun.cuda.testing.FakeDriverApi.INVALID_VALUE;
import static dev.gatun.cuda.testing.FakeDriverApi.SUCCESS;

import dev.gatun.cuda.bindings.driver.CUdevResource_st;
import dev.gatun.cuda.bindings.driver.CUdevSmResource_st;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * The simulated driver's green contexts and kernel libraries, as strict as the real driver: SM
 * resources are written with a mark the simulation checks when they come back (a zeroed or
 * foreign struct is refused), groups are rounded up to {@link #GRANULARITY} SMs as on Hopper,
 * a green context needs {@code CU_GREEN_CTX_DEFAULT_STREAM}, its streams need
 * {@code CU_STREAM_NON_BLOCKING}, and destroying it while a stream of it lives is a
 * {@linkplain FakeDriverApi#violations() violation}. A library is a module the driver loads for
 * every context, lazily by default, as drivers since CUDA 12.2 do: {@code cuLibraryLoadData}
 * keeps the image and refuses only bytes that are no image; the code is loaded (and its PTX
 * compiled, which may fail) when a context first needs it ({@code cuLibraryGetModule},
 * {@code cuLibraryGetKernel}, {@code cuKernelGetFunction}), or at the load itself with
 * {@link FakeDriverApi#eagerLibraryLoading}. {@code cuKernelGetFunction} and
 * {@code cuLibraryGetModule} need a current context, and unloading a library while a queued
 * launch uses it is a violation (through the module's own check).
 */
final class SimulatedGreenContexts {

    /** Hopper's SM granularity: a group's count is rounded up to a multiple of it. */
    static final int GRANULARITY = 8;
    private static final long SM_COUNT = CUdevResource_st.sm$offset() + CUdevSmResource_st.smCount$offset();
    private static final long MIN_PARTITION = CUdevResource_st.sm$offset() + CUdevSmResource_st.minSmPartitionSize$offset();
    private static final long ALIGNMENT = CUdevResource_st.sm$offset() + CUdevSmResource_st.smCoscheduledAlignment$offset();
    /** Where the simulation marks a resource it wrote (inside the struct's internal padding). */
    private static final long MARK = 4;
    private static final int MARK_VALUE = 0x5e5e0000;

    private record Green(int device, int smCount, long context) {
    }

    private record LibraryKernel(long library, String name) {
    }

    /** A library: the copy of its image the driver keeps, and the module a context loaded it as (0 before). */
    private static final class Library {
        final MemorySegment image;
        long module;

        Library(MemorySegment image) {
            this.image = image;
        }
    }

    private final FakeDriverApi gpu;
    /** Descriptors by handle: their device and SM count. */
    private final Map<Long, int[]> descriptors = new HashMap<>();
    private final Map<Long, Green> greens = new HashMap<>();
    /** Streams made with cuGreenCtxStreamCreate. */
    final Set<Long> greenStreams = new HashSet<>();
    /** Libraries by handle. */
    private final Map<Long, Library> libraries = new HashMap<>();
    /** Set by {@link FakeDriverApi#eagerLibraryLoading}: libraries load at cuLibraryLoadData (CUDA_MODULE_DATA_LOADING=EAGER). */
    boolean eager;
    private final Map<Long, LibraryKernel> kernels = new HashMap<>();

    SimulatedGreenContexts(FakeDriverApi gpu) {
        this.gpu = gpu;
    }

    private int sms() {
        return gpu.devices.attributes.getOrDefault(CudaDriver.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT(),
                SimulatedDevices.defaultAttribute(CudaDriver.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT()));
    }

    private static void write(MemorySegment resource, int device, int smCount) {
        MemorySegment r = resource.reinterpret(CUdevResource_st.sizeof());
        r.fill((byte) 0);
        r.set(ValueLayout.JAVA_INT, 0, CudaDriver.CU_DEV_RESOURCE_TYPE_SM());
        r.set(ValueLayout.JAVA_INT, MARK, MARK_VALUE + device);
        r.set(ValueLayout.JAVA_INT, SM_COUNT, smCount);
        r.set(ValueLayout.JAVA_INT, MIN_PARTITION, GRANULARITY);
        r.set(ValueLayout.JAVA_INT, ALIGNMENT, GRANULARITY);
    }

    /** The device of a resource this simulation wrote, or -1. */
    private static int deviceOf(MemorySegment resource) {
        MemorySegment r = resource.reinterpret(CUdevResource_st.sizeof());
        if (r.get(ValueLayout.JAVA_INT, 0) != CudaDriver.CU_DEV_RESOURCE_TYPE_SM()) {
            return -1;
        }
        int mark = r.get(ValueLayout.JAVA_INT, MARK) - MARK_VALUE;
        return mark >= 0 && mark < 256 ? mark : -1;
    }

    public int cuDeviceGetDevResource(int device, MemorySegment resource, int type) {
        if (device < 0 || device >= gpu.devices.deviceCount) {
            return CudaDriver.CUDA_ERROR_INVALID_DEVICE();
        }
        if (type != CudaDriver.CU_DEV_RESOURCE_TYPE_SM() || resource.address() == 0) {
            return INVALID_VALUE;
        }
        write(resource, device, sms());
        return SUCCESS;
    }

    public int cuDevSmResourceSplitByCount(MemorySegment result, MemorySegment nbGroups, MemorySegment input,
            MemorySegment remaining, int useFlags, int minCount) {
        int device = deviceOf(input);
        if (device < 0 || nbGroups.address() == 0 || (useFlags & ~3) != 0 || minCount <= 0) {
            return INVALID_VALUE;
        }
        MemorySegment count = nbGroups.reinterpret(4);
        int asked = count.get(ValueLayout.JAVA_INT, 0);
        int total = input.reinterpret(CUdevResource_st.sizeof()).get(ValueLayout.JAVA_INT, SM_COUNT);
        int size = (minCount + GRANULARITY - 1) / GRANULARITY * GRANULARITY;
        int possible = total / size;
        int made = result.address() == 0 ? possible : Math.min(asked, possible);
        if (made == 0) {
            return CudaDriver.CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION();
        }
        for (int i = 0; result.address() != 0 && i < made; i++) {
            write(result.reinterpret((i + 1) * CUdevResource_st.sizeof()).asSlice(i * CUdevResource_st.sizeof()), device,
                    size);
        }
        if (remaining.address() != 0) {
            write(remaining, device, total - (result.address() == 0 ? 0 : made * size));
        }
        count.set(ValueLayout.JAVA_INT, 0, made);
        return SUCCESS;
    }

    public int cuDevResourceGenerateDesc(MemorySegment phDesc, MemorySegment resources, int nbResources) {
        if (nbResources != 1) {
            return INVALID_VALUE; // Gatun describes one group at a time; more would need the SMs disjoint
        }
        int device = deviceOf(resources);
        int sms = resources.reinterpret(CUdevResource_st.sizeof()).get(ValueLayout.JAVA_INT, SM_COUNT);
        if (device < 0 || sms == 0) {
            return CudaDriver.CUDA_ERROR_INVALID_RESOURCE_TYPE();
        }
        long h = gpu.newHandle();
        descriptors.put(h, new int[] {device, sms});
        phDesc.set(ValueLayout.JAVA_LONG, 0, h);
        return SUCCESS;
    }

    public int cuGreenCtxCreate(MemorySegment phCtx, MemorySegment desc, int dev, int flags) {
        int[] d = descriptors.get(desc.address());
        if (d == null || d[0] != dev || flags != CudaDriver.CU_GREEN_CTX_DEFAULT_STREAM()) {
            return INVALID_VALUE;
        }
        long h = gpu.newHandle();
        greens.put(h, new Green(dev, d[1], gpu.devices.createForeignContext(dev)));
        phCtx.set(ValueLayout.JAVA_LONG, 0, h);
        return SUCCESS;
    }

    public int cuCtxFromGreenCtx(MemorySegment pContext, MemorySegment hCtx) {
        Green g = greens.get(hCtx.address());
        if (g == null) {
            return INVALID_HANDLE;
        }
        pContext.set(ValueLayout.JAVA_LONG, 0, g.context());
        return SUCCESS;
    }

    public int cuGreenCtxStreamCreate(MemorySegment phStream, MemorySegment greenCtx, int flags, int priority) {
        Green g = greens.get(greenCtx.address());
        if (g == null) {
            return INVALID_HANDLE;
        }
        if (flags != CudaDriver.CU_STREAM_NON_BLOCKING()) {
            return INVALID_VALUE;
        }
        long h = gpu.streams.create(priority, g.context());
        greenStreams.add(h);
        phStream.set(ValueLayout.JAVA_LONG, 0, h);
        return SUCCESS;
    }

    public int cuGreenCtxDestroy(MemorySegment hCtx) {
        Green g = greens.remove(hCtx.address());
        if (g == null) {
            return INVALID_HANDLE;
        }
        for (SimulatedStreams.Stream s : gpu.streams.all()) {
            if (s.context == g.context()) {
                gpu.violations.add("cuGreenCtxDestroy while a stream of the green context lives");
            }
        }
        gpu.devices.destroyForeignContext(g.context());
        return SUCCESS;
    }

    /** Green contexts not yet destroyed. */
    int live() {
        return greens.size();
    }

    /** The SM count of the green context whose CUcontext is {@code context}, or 0 when it is none. */
    int smCountOf(long context) {
        return greens.values().stream().filter(g -> g.context() == context).mapToInt(Green::smCount).findFirst()
                .orElse(0);
    }

    // ---- libraries ----

    public int cuLibraryLoadData(MemorySegment library, MemorySegment code, MemorySegment jitOptions,
            MemorySegment jitOptionsValues, int numJitOptions, MemorySegment libraryOptions,
            MemorySegment libraryOptionValues, int numLibraryOptions) {
        if ((numJitOptions != 0 && jitOptions.address() == 0) || (numLibraryOptions != 0 && libraryOptions.address() == 0)) {
            return INVALID_VALUE;
        }
        if (!SimulatedModules.isImage(code)) {
            return CudaDriver.CUDA_ERROR_INVALID_IMAGE(); // even a lazy load reads what kind of image it is
        }
        Library lib = new Library(SimulatedModules.copyOf(code));
        if (eager) {
            int r = load(lib, "cuLibraryLoadData");
            if (r != SUCCESS) {
                return r;
            }
        }
        long h = gpu.newHandle();
        libraries.put(h, lib);
        library.set(ValueLayout.JAVA_LONG, 0, h);
        return SUCCESS;
    }

    /** Loads {@code lib}'s image as a module the first time a context needs it (for {@code function}); its result. */
    private int load(Library lib, String function) {
        if (lib.module != 0) {
            return SUCCESS;
        }
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(ValueLayout.JAVA_LONG);
            int r = gpu.modules.load(out, lib.image, function);
            if (r == SUCCESS) {
                lib.module = out.get(ValueLayout.JAVA_LONG, 0);
            }
            return r;
        }
    }

    public int cuLibraryGetModule(MemorySegment pMod, MemorySegment library) {
        Library lib = libraries.get(library.address());
        if (lib == null) {
            return INVALID_HANDLE;
        }
        int r = load(lib, "cuLibraryGetModule"); // a context is current (SimulatedCurrentContexts)
        if (r != SUCCESS) {
            return r;
        }
        pMod.set(ValueLayout.JAVA_LONG, 0, lib.module);
        return SUCCESS;
    }

    public int cuLibraryGetKernel(MemorySegment pKernel, MemorySegment library, MemorySegment name) {
        Library lib = libraries.get(library.address());
        if (lib == null) {
            return INVALID_HANDLE;
        }
        int r = load(lib, "cuLibraryGetKernel");
        if (r != SUCCESS) {
            return r;
        }
        String wanted = name.reinterpret(4096).getString(0);
        if (!gpu.modules.modules.get(lib.module).containsKey(wanted)) {
            return CudaDriver.CUDA_ERROR_NOT_FOUND();
        }
        long h = gpu.newHandle();
        kernels.put(h, new LibraryKernel(library.address(), wanted));
        pKernel.set(ValueLayout.JAVA_LONG, 0, h);
        return SUCCESS;
    }

    public int cuKernelGetFunction(MemorySegment pFunc, MemorySegment kernel) {
        LibraryKernel k = kernels.get(kernel.address());
        if (k == null) {
            return INVALID_HANDLE;
        }
        long module = libraries.get(k.library()).module; // loaded by the cuLibraryGetKernel that made the kernel; a context is current (SimulatedCurrentContexts)
        try (Arena a = Arena.ofConfined()) {
            return gpu.modules.cuModuleGetFunction(pFunc, MemorySegment.ofAddress(module), a.allocateFrom(k.name()));
        }
    }

    public int cuLibraryUnload(MemorySegment library) {
        Library lib = libraries.remove(library.address());
        if (lib == null) {
            return INVALID_HANDLE;
        }
        kernels.values().removeIf(k -> k.library() == library.address());
        return lib.module == 0 ? SUCCESS : gpu.modules.cuModuleUnload(MemorySegment.ofAddress(lib.module));
    }

    /** Libraries a context has loaded (their code compiled into a module), of those not yet unloaded. */
    int loadedLibraries() {
        return (int) libraries.values().stream().filter(l -> l.module != 0).count();
    }

    /** Libraries loaded and not yet unloaded. */
    int liveLibraries() {
        return libraries.size();
    }
}
