package dev.gatun.cuda.testing;

import dev.gatun.cuda.bindings.driver.CUDA_KERNEL_NODE_PARAMS_v2_st;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.driver.DriverApi;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * A simulated CUDA device behind the {@link DriverApi} seam, for CPU tests of Gatun's owners.
 *
 * <p>Device memory is backed by host memory at fake device addresses; streams are queues of
 * operations that run at once unless the test {@linkplain #hold holds} the stream (the GPU is
 * "busy"); events complete when the work before them ran; synchronizing calls release every
 * hold (the host waited for the GPU). Frees are checked against queued work: freeing memory
 * that a queued operation still uses is recorded as a {@linkplain #violations() violation}
 * instead of corrupting anything, so a test can prove Gatun never does it.
 */
public final class FakeDriverApi implements DriverApi {

    public static final int SUCCESS = 0;
    public static final int INVALID_VALUE = CudaDriver.CUDA_ERROR_INVALID_VALUE();
    public static final int NOT_READY = CudaDriver.CUDA_ERROR_NOT_READY();
    public static final int INVALID_HANDLE = CudaDriver.CUDA_ERROR_INVALID_HANDLE();
    public static final int OUT_OF_MEMORY = CudaDriver.CUDA_ERROR_OUT_OF_MEMORY();

    // ---- configuration ----
    private int version = 13000;
    private int initResult = SUCCESS;
    private int deviceCount = 1;
    private final Map<Integer, Integer> attributes = new HashMap<>();
    private final Set<Integer> failingAttributes = new HashSet<>();
    private final Set<String> missingSymbols = new HashSet<>();
    private long totalMemory = 141L << 30;
    private long memoryLimit = Long.MAX_VALUE;

    // ---- state ----
    private final Arena arena = Arena.ofShared();
    private final Map<Integer, MemorySegment> errorStrings = new HashMap<>();
    private final ThreadLocal<Long> current = ThreadLocal.withInitial(() -> 0L);
    private final Map<Long, FakeStream> streams = new LinkedHashMap<>();
    private final Map<Long, FakeEvent> events = new HashMap<>();
    private final TreeMap<Long, DeviceAllocation> device = new TreeMap<>();
    private final Map<Long, Arena> host = new HashMap<>();
    private final Map<Long, Long> hostSizes = new HashMap<>();
    private final List<String> violations = new ArrayList<>();
    private long nextHandle = 0x1000;
    private long nextDevice = 0x7f00_0000_0000L;
    private long deviceBytes;
    private long clockNanos;
    private int retainedContexts;
    private final Map<Long, Map<String, FakeFunction>> modules = new HashMap<>();
    private final Map<Long, FakeFunction> functions = new HashMap<>();
    private final Map<String, FakeKernel> bodies = new HashMap<>();
    private final Map<String, Integer> staticShared = new HashMap<>();
    private int launches;
    private boolean rejectPtx;
    private boolean anyFunction;
    private final List<String> functionLookups = new ArrayList<>();

    /** A function parsed from a PTX .entry: its name and parameter sizes. */
    private static final class FakeFunction {
        final String name;
        final long module;
        final List<Integer> paramSizes;
        int maxDynamicShared;

        FakeFunction(String name, long module, List<Integer> paramSizes) {
            this.name = name;
            this.module = module;
            this.paramSizes = paramSizes;
        }
    }

    private static final class DeviceAllocation {
        final long base;
        final long size;
        final MemorySegment backing;
        final Arena arena;

        DeviceAllocation(long base, long size, Arena arena) {
            this.base = base;
            this.size = size;
            this.arena = arena;
            this.backing = arena.allocate(Math.max(1, size), 256);
        }
    }

    private static final class Op {
        final Runnable action;
        final FakeEvent awaited;
        final long awaitedGeneration;
        final Set<Long> deviceUses;
        final Set<Long> hostUses;
        long module;
        long exec;
        /** What a kernel launch's graph node describes; null for every other operation. */
        KernelNode kernel;

        Op(Runnable action, FakeEvent awaited, long awaitedGeneration, Set<Long> deviceUses, Set<Long> hostUses) {
            this.action = action;
            this.awaited = awaited;
            this.awaitedGeneration = awaitedGeneration;
            this.deviceUses = deviceUses;
            this.hostUses = hostUses;
        }
    }

    private static final class FakeStream {
        final ArrayDeque<Op> queue = new ArrayDeque<>();
        boolean held;
        int captureStatus;
        /** Operations captured (not run) while a capture begun through cuStreamBeginCapture is open. */
        List<Op> captured;
        final int priority;

        FakeStream(int priority) {
            this.priority = priority;
        }
    }

    private static final class FakeEvent {
        final boolean timing;
        long recorded;
        long completed;
        long timestamp;

        FakeEvent(boolean timing) {
            this.timing = timing;
        }
    }

    // ---- test controls ----

    public synchronized FakeDriverApi version(int encoded) {
        this.version = encoded;
        return this;
    }

    public synchronized FakeDriverApi initResult(int result) {
        this.initResult = result;
        return this;
    }

    public synchronized FakeDriverApi deviceCount(int count) {
        this.deviceCount = count;
        return this;
    }

    /** Sets what cuDeviceGetAttribute reports for a CU_DEVICE_ATTRIBUTE_* value. */
    public synchronized FakeDriverApi attribute(int attribute, int value) {
        attributes.put(attribute, value);
        return this;
    }

    /** Makes cuDeviceGetAttribute fail for this attribute. */
    public synchronized FakeDriverApi failAttribute(int attribute) {
        failingAttributes.add(attribute);
        return this;
    }

    public synchronized FakeDriverApi withoutSymbol(String name) {
        missingSymbols.add(name);
        return this;
    }

    /** Device allocations beyond this many bytes fail with CUDA_ERROR_OUT_OF_MEMORY. */
    public synchronized FakeDriverApi memoryLimit(long bytes) {
        this.memoryLimit = bytes;
        return this;
    }

    /** The GPU is busy on this stream: its work waits until {@link #release} (or a synchronize). */
    public synchronized void hold(MemorySegment stream) {
        streamOf(stream.address()).held = true;
    }

    /** The GPU is busy on every stream that exists now: work waits until a host wait (or {@link #release}). */
    public synchronized void holdAll() {
        for (FakeStream s : streams.values()) {
            s.held = true;
        }
    }

    /** The GPU finishes the held work on this stream (and whatever waited on it). */
    public synchronized void release(MemorySegment stream) {
        streamOf(stream.address()).held = false;
        pump();
    }

    /** Marks a stream as capturing (as if someone began a capture on it), or not. */
    public synchronized void capturing(MemorySegment stream, boolean capturing) {
        streamOf(stream.address()).captureStatus = capturing ? CudaDriver.CU_STREAM_CAPTURE_STATUS_ACTIVE()
                : CudaDriver.CU_STREAM_CAPTURE_STATUS_NONE();
    }

    /**
     * Invalidates the capture open on this stream, as a call the driver forbids during a capture
     * would: ending it then ends it without a graph and reports CUDA_ERROR_STREAM_CAPTURE_INVALIDATED.
     */
    public synchronized void invalidateCapture(MemorySegment stream) {
        FakeStream s = streamOf(stream.address());
        if (s.captured == null) {
            throw new IllegalStateException("no capture is open on stream 0x" + Long.toHexString(stream.address()));
        }
        s.captureStatus = CudaDriver.CU_STREAM_CAPTURE_STATUS_INVALIDATED();
    }

    /** Frees (or other misuse) that would have been unsafe on a real GPU. Empty in a correct run. */
    public synchronized List<String> violations() {
        return List.copyOf(violations);
    }

    public synchronized int liveDeviceAllocations() {
        return device.size();
    }

    public synchronized long liveDeviceBytes() {
        return deviceBytes;
    }

    public synchronized int liveHostAllocations() {
        return host.size();
    }

    public synchronized int liveStreams() {
        return streams.size();
    }

    public synchronized int liveEvents() {
        return events.size();
    }

    public synchronized int queuedOperations(MemorySegment stream) {
        return streamOf(stream.address()).queue.size();
    }

    /** Reads device memory directly (as a debugger would), for assertions. */
    public synchronized byte[] deviceBytes(long address, int length) {
        MemorySegment m = resolve(address, length);
        if (m == null) {
            throw new IllegalArgumentException("no device memory at 0x" + Long.toHexString(address) + "+" + length);
        }
        return m.toArray(ValueLayout.JAVA_BYTE);
    }

    /** What launches of kernel {@code name} do when their stream runs them (default: nothing). */
    public synchronized FakeDriverApi kernelBody(String name, FakeKernel body) {
        bodies.put(name, body);
        return this;
    }

    /** Static shared memory that kernel {@code name} reports (default 0). */
    public synchronized FakeDriverApi staticSharedMemory(String name, int bytes) {
        staticShared.put(name, bytes);
        return this;
    }

    /** Rejects every PTX image with CUDA_ERROR_UNSUPPORTED_PTX_VERSION (a driver older than the compiler). */
    public synchronized FakeDriverApi rejectPtx(boolean reject) {
        this.rejectPtx = reject;
        return this;
    }

    /** Makes every module claim to have any function asked for (with no parameters). */
    public synchronized FakeDriverApi anyFunction(boolean any) {
        this.anyFunction = any;
        return this;
    }

    /** The function names cuModuleGetFunction was asked for, in order. */
    public synchronized List<String> functionLookups() {
        return List.copyOf(functionLookups);
    }

    public synchronized int liveModules() {
        return modules.size();
    }

    /** Launches accepted so far (all kinds). */
    public synchronized int launches() {
        return launches;
    }

    // ---- DriverApi ----

    @Override
    public synchronized boolean hasSymbol(String name) {
        return !missingSymbols.contains(name);
    }

    @Override
    public synchronized int cuInit(int flags) {
        return initResult;
    }

    @Override
    public synchronized int cuDriverGetVersion(MemorySegment out) {
        out.set(ValueLayout.JAVA_INT, 0, version);
        return SUCCESS;
    }

    @Override
    public synchronized int cuGetErrorName(int error, MemorySegment out) {
        return errorText(error, out, "CUDA error " + error);
    }

    @Override
    public synchronized int cuGetErrorString(int error, MemorySegment out) {
        return errorText(error, out, "simulated driver error " + error);
    }

    private int errorText(int error, MemorySegment out, String text) {
        MemorySegment s = errorStrings.computeIfAbsent(error, e -> arena.allocateFrom(text));
        out.set(ValueLayout.ADDRESS, 0, s);
        return SUCCESS;
    }

    @Override
    public synchronized int cuDeviceGetCount(MemorySegment count) {
        count.set(ValueLayout.JAVA_INT, 0, deviceCount);
        return SUCCESS;
    }

    @Override
    public synchronized int cuDeviceGet(MemorySegment out, int ordinal) {
        if (ordinal < 0 || ordinal >= deviceCount) {
            return CudaDriver.CUDA_ERROR_INVALID_DEVICE();
        }
        out.set(ValueLayout.JAVA_INT, 0, ordinal);
        return SUCCESS;
    }

    @Override
    public synchronized int cuDeviceGetName(MemorySegment name, int len, int dev) {
        name.reinterpret(len).setString(0, "Simulated GPU " + dev);
        return SUCCESS;
    }

    @Override
    public synchronized int cuDeviceGetAttribute(MemorySegment pi, int attrib, int dev) {
        if (failingAttributes.contains(attrib)) {
            return INVALID_VALUE;
        }
        pi.set(ValueLayout.JAVA_INT, 0, attributes.getOrDefault(attrib, defaultAttribute(attrib)));
        return SUCCESS;
    }

    private static int defaultAttribute(int attribute) {
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
        }
        return 0;
    }

    @Override
    public synchronized int cuDeviceTotalMem_v2(MemorySegment bytes, int dev) {
        bytes.set(ValueLayout.JAVA_LONG, 0, totalMemory);
        return SUCCESS;
    }

    @Override
    public synchronized int cuDeviceGetPCIBusId(MemorySegment out, int len, int dev) {
        out.reinterpret(len).setString(0, String.format("0000:%02x:00.0", dev + 6));
        return SUCCESS;
    }

    @Override
    public synchronized int cuDeviceCanAccessPeer(MemorySegment canAccessPeer, int dev, int peerDev) {
        canAccessPeer.set(ValueLayout.JAVA_INT, 0, dev != peerDev ? 1 : 0);
        return SUCCESS;
    }

    @Override
    public synchronized int cuDeviceGetP2PAttribute(MemorySegment value, int attrib, int srcDevice, int dstDevice) {
        value.set(ValueLayout.JAVA_INT, 0, 1);
        return SUCCESS;
    }

    @Override
    public synchronized int cuDevicePrimaryCtxRetain(MemorySegment pctx, int dev) {
        retainedContexts++;
        pctx.set(ValueLayout.JAVA_LONG, 0, 0xC0_0000L + dev);
        return SUCCESS;
    }

    /** How many times a primary context was retained (Gatun retains once per device). */
    public synchronized int primaryContextRetains() {
        return retainedContexts;
    }

    @Override
    public synchronized int cuCtxSetCurrent(MemorySegment ctx) {
        current.set(ctx.address());
        return SUCCESS;
    }

    @Override
    public synchronized int cuCtxGetCurrent(MemorySegment pctx) {
        pctx.set(ValueLayout.JAVA_LONG, 0, current.get());
        return SUCCESS;
    }

    @Override
    public synchronized int cuCtxSynchronize() {
        drainAll();
        return SUCCESS;
    }

    @Override
    public synchronized int cuCtxGetStreamPriorityRange(MemorySegment least, MemorySegment greatest) {
        least.set(ValueLayout.JAVA_INT, 0, 0);
        greatest.set(ValueLayout.JAVA_INT, 0, -5);
        return SUCCESS;
    }

    @Override
    public synchronized int cuCtxEnablePeerAccess(MemorySegment peerContext, int flags) {
        return SUCCESS;
    }

    @Override
    public synchronized int cuMemGetInfo_v2(MemorySegment free, MemorySegment total) {
        free.set(ValueLayout.JAVA_LONG, 0, totalMemory - deviceBytes);
        total.set(ValueLayout.JAVA_LONG, 0, totalMemory);
        return SUCCESS;
    }

    // ---- streams ----

    @Override
    public synchronized int cuStreamCreateWithPriority(MemorySegment out, int flags, int priority) {
        long h = nextHandle += 16;
        streams.put(h, new FakeStream(priority));
        out.set(ValueLayout.JAVA_LONG, 0, h);
        return SUCCESS;
    }

    @Override
    public synchronized int cuStreamDestroy_v2(MemorySegment stream) {
        FakeStream s = streams.get(stream.address());
        if (s == null) {
            return INVALID_HANDLE;
        }
        if (!s.queue.isEmpty()) {
            // The real driver would finish the work and then release the stream; Gatun
            // destroys only after the stream's final fence, so queued work here is a bug.
            violations.add("cuStreamDestroy on a stream with " + s.queue.size() + " queued operations");
        }
        streams.remove(stream.address());
        return SUCCESS;
    }

    @Override
    public synchronized int cuStreamQuery(MemorySegment stream) {
        FakeStream s = streams.get(stream.address());
        return s == null ? INVALID_HANDLE : s.queue.isEmpty() ? SUCCESS : NOT_READY;
    }

    @Override
    public synchronized int cuStreamSynchronize(MemorySegment stream) {
        if (!streams.containsKey(stream.address())) {
            return INVALID_HANDLE;
        }
        drainAll();
        return SUCCESS;
    }

    @Override
    public synchronized int cuStreamWaitEvent(MemorySegment stream, MemorySegment event, int flags) {
        FakeStream s = streams.get(stream.address());
        FakeEvent e = events.get(event.address());
        if (s == null || e == null) {
            return INVALID_HANDLE;
        }
        if (e.completed < e.recorded) {
            s.queue.add(new Op(() -> { }, e, e.recorded, Set.of(), Set.of()));
        }
        return SUCCESS;
    }

    @Override
    public synchronized int cuStreamIsCapturing(MemorySegment stream, MemorySegment status) {
        FakeStream s = streams.get(stream.address());
        if (s == null) {
            return INVALID_HANDLE;
        }
        status.set(ValueLayout.JAVA_INT, 0, s.captureStatus);
        return SUCCESS;
    }

    @Override
    public synchronized int cuStreamGetPriority(MemorySegment stream, MemorySegment priority) {
        FakeStream s = streams.get(stream.address());
        if (s == null) {
            return INVALID_HANDLE;
        }
        priority.set(ValueLayout.JAVA_INT, 0, s.priority);
        return SUCCESS;
    }

    // ---- events ----

    @Override
    public synchronized int cuEventCreate(MemorySegment out, int flags) {
        long h = nextHandle += 16;
        events.put(h, new FakeEvent((flags & CudaDriver.CU_EVENT_DISABLE_TIMING()) == 0));
        out.set(ValueLayout.JAVA_LONG, 0, h);
        return SUCCESS;
    }

    @Override
    public synchronized int cuEventDestroy_v2(MemorySegment event) {
        return events.remove(event.address()) == null ? INVALID_HANDLE : SUCCESS;
    }

    @Override
    public synchronized int cuEventRecord(MemorySegment event, MemorySegment stream) {
        FakeEvent e = events.get(event.address());
        FakeStream s = streams.get(stream.address());
        if (e == null || s == null) {
            return INVALID_HANDLE;
        }
        if (s.captureStatus != CudaDriver.CU_STREAM_CAPTURE_STATUS_NONE()) {
            violations.add("cuEventRecord of a Gatun fence into a capturing stream");
        }
        long generation = ++e.recorded;
        enqueue(s, () -> {
            e.completed = Math.max(e.completed, generation);
            e.timestamp = clockNanos += 500_000;
        }, Set.of(), Set.of());
        return SUCCESS;
    }

    @Override
    public synchronized int cuEventQuery(MemorySegment event) {
        FakeEvent e = events.get(event.address());
        return e == null ? INVALID_HANDLE : e.completed >= e.recorded ? SUCCESS : NOT_READY;
    }

    @Override
    public synchronized int cuEventSynchronize(MemorySegment event) {
        FakeEvent e = events.get(event.address());
        if (e == null) {
            return INVALID_HANDLE;
        }
        drainAll();
        return SUCCESS;
    }

    @Override
    public synchronized int cuEventElapsedTime_v2(MemorySegment ms, MemorySegment start, MemorySegment end) {
        FakeEvent s = events.get(start.address());
        FakeEvent e = events.get(end.address());
        if (s == null || e == null) {
            return INVALID_HANDLE;
        }
        if (!s.timing || !e.timing) {
            return CudaDriver.CUDA_ERROR_INVALID_HANDLE();
        }
        if (s.completed < s.recorded || e.completed < e.recorded || s.recorded == 0 || e.recorded == 0) {
            return NOT_READY;
        }
        ms.set(ValueLayout.JAVA_FLOAT, 0, (e.timestamp - s.timestamp) / 1e6f);
        return SUCCESS;
    }

    // ---- memory ----

    @Override
    public synchronized int cuMemAlloc_v2(MemorySegment out, long bytes) {
        return allocateDevice(out, bytes);
    }

    @Override
    public synchronized int cuMemAllocAsync(MemorySegment out, long bytes, MemorySegment stream) {
        if (!streams.containsKey(stream.address())) {
            return INVALID_HANDLE;
        }
        return allocateDevice(out, bytes);
    }

    private int allocateDevice(MemorySegment out, long bytes) {
        if (bytes <= 0) {
            return INVALID_VALUE;
        }
        if (deviceBytes + bytes > memoryLimit) {
            return OUT_OF_MEMORY;
        }
        long base = nextDevice;
        nextDevice += (bytes + 511) & ~511L;
        device.put(base, new DeviceAllocation(base, bytes, Arena.ofShared()));
        deviceBytes += bytes;
        out.set(ValueLayout.JAVA_LONG, 0, base);
        return SUCCESS;
    }

    @Override
    public synchronized int cuMemFree_v2(long address) {
        return freeDevice(address, "cuMemFree");
    }

    @Override
    public synchronized int cuMemFreeAsync(long address, MemorySegment stream) {
        FakeStream s = streams.get(stream.address());
        if (s == null) {
            return INVALID_HANDLE;
        }
        DeviceAllocation a = device.get(address);
        if (a == null) {
            return INVALID_VALUE;
        }
        // Stream-ordered: legal while earlier work on this stream uses it, not while other
        // streams' queued work does.
        for (Map.Entry<Long, FakeStream> other : streams.entrySet()) {
            if (other.getValue() != s && usesDevice(other.getValue(), a)) {
                violations.add("cuMemFreeAsync of 0x" + Long.toHexString(address)
                        + " while another stream's queued work uses it");
            }
        }
        enqueue(s, () -> release(a), Set.of(), Set.of());
        return SUCCESS;
    }

    private int freeDevice(long address, String what) {
        DeviceAllocation a = device.get(address);
        if (a == null) {
            return INVALID_VALUE;
        }
        for (FakeStream s : streams.values()) {
            if (usesDevice(s, a)) {
                violations.add(what + " of 0x" + Long.toHexString(address) + " while queued work still uses it");
            }
        }
        for (List<Op> ops : execs.values()) {
            for (Op op : ops) {
                if (op.deviceUses.contains(a.base)) {
                    violations.add(what + " of 0x" + Long.toHexString(address) + " baked into a live graph executable");
                }
            }
        }
        release(a);
        return SUCCESS;
    }

    private void release(DeviceAllocation a) {
        if (device.remove(a.base) != null) {
            deviceBytes -= a.size;
            a.arena.close();
        }
    }

    private static boolean usesDevice(FakeStream s, DeviceAllocation a) {
        for (Op op : s.queue) {
            if (op.deviceUses.contains(a.base)) {
                return true;
            }
        }
        return false;
    }

    @Override
    public synchronized int cuMemHostAlloc(MemorySegment out, long bytes, int flags) {
        Arena a = Arena.ofShared();
        MemorySegment m = a.allocate(bytes, 4096);
        host.put(m.address(), a);
        hostSizes.put(m.address(), bytes);
        out.set(ValueLayout.JAVA_LONG, 0, m.address());
        return SUCCESS;
    }

    @Override
    public synchronized int cuMemFreeHost(MemorySegment p) {
        Arena a = host.get(p.address());
        if (a == null) {
            return INVALID_VALUE;
        }
        for (FakeStream s : streams.values()) {
            for (Op op : s.queue) {
                if (op.hostUses.contains(p.address())) {
                    violations.add("cuMemFreeHost of pinned memory a queued transfer still uses");
                    return INVALID_VALUE; // keep the memory: the queued copy would touch it
                }
            }
        }
        host.remove(p.address());
        hostSizes.remove(p.address());
        a.close();
        return SUCCESS;
    }

    @Override
    public synchronized int cuMemsetD8_v2(long dst, byte value, long n) {
        MemorySegment m = resolve(dst, n);
        if (m == null) {
            return INVALID_VALUE;
        }
        m.fill(value);
        return SUCCESS;
    }

    @Override
    public synchronized int cuMemsetD8Async(long dst, byte value, long n, MemorySegment stream) {
        return deviceOp(stream, dst, n, m -> m.fill(value));
    }

    @Override
    public synchronized int cuMemsetD32_v2(long dst, int value, long n) {
        MemorySegment m = resolve(dst, n * 4);
        if (m == null) {
            return INVALID_VALUE;
        }
        fill32(m, value);
        return SUCCESS;
    }

    @Override
    public synchronized int cuMemsetD32Async(long dst, int value, long n, MemorySegment stream) {
        return deviceOp(stream, dst, n * 4, m -> fill32(m, value));
    }

    private static void fill32(MemorySegment m, int value) {
        for (long i = 0; i < m.byteSize(); i += 4) {
            m.set(ValueLayout.JAVA_INT_UNALIGNED, i, value);
        }
    }

    @Override
    public synchronized int cuMemcpyHtoD_v2(long dst, MemorySegment src, long n) {
        MemorySegment d = resolve(dst, n);
        if (d == null || !src.isNative()) {
            return INVALID_VALUE;
        }
        MemorySegment.copy(src.reinterpret(n), 0, d, 0, n);
        return SUCCESS;
    }

    @Override
    public synchronized int cuMemcpyDtoH_v2(MemorySegment dst, long src, long n) {
        MemorySegment s = resolve(src, n);
        if (s == null || !dst.isNative()) {
            return INVALID_VALUE;
        }
        MemorySegment.copy(s, 0, dst.reinterpret(n), 0, n);
        return SUCCESS;
    }

    @Override
    public synchronized int cuMemcpyDtoD_v2(long dst, long src, long n) {
        MemorySegment d = resolve(dst, n);
        MemorySegment s = resolve(src, n);
        if (d == null || s == null) {
            return INVALID_VALUE;
        }
        MemorySegment.copy(s, 0, d, 0, n);
        return SUCCESS;
    }

    @Override
    public synchronized int cuMemcpyHtoDAsync_v2(long dst, MemorySegment src, long n, MemorySegment stream) {
        FakeStream s = streams.get(stream.address());
        MemorySegment d = resolve(dst, n);
        if (s == null || d == null || !src.isNative()) {
            return s == null ? INVALID_HANDLE : INVALID_VALUE;
        }
        // The DMA engine sees raw memory, not the caller's Java view (whose arena may close first).
        MemorySegment from = MemorySegment.ofAddress(src.address()).reinterpret(n);
        enqueue(s, () -> MemorySegment.copy(from, 0, d, 0, n), Set.of(allocationOf(dst).base), hostUse(src.address()));
        return SUCCESS;
    }

    @Override
    public synchronized int cuMemcpyDtoHAsync_v2(MemorySegment dst, long src, long n, MemorySegment stream) {
        FakeStream s = streams.get(stream.address());
        MemorySegment from = resolve(src, n);
        if (s == null || from == null || !dst.isNative()) {
            return s == null ? INVALID_HANDLE : INVALID_VALUE;
        }
        MemorySegment to = MemorySegment.ofAddress(dst.address()).reinterpret(n);
        enqueue(s, () -> MemorySegment.copy(from, 0, to, 0, n), Set.of(allocationOf(src).base), hostUse(dst.address()));
        return SUCCESS;
    }

    @Override
    public synchronized int cuMemcpyDtoDAsync_v2(long dst, long src, long n, MemorySegment stream) {
        FakeStream s = streams.get(stream.address());
        MemorySegment d = resolve(dst, n);
        MemorySegment from = resolve(src, n);
        if (s == null || d == null || from == null) {
            return s == null ? INVALID_HANDLE : INVALID_VALUE;
        }
        enqueue(s, () -> MemorySegment.copy(from, 0, d, 0, n), new HashSet<>(List.of(allocationOf(dst).base, allocationOf(src).base)),
                Set.of());
        return SUCCESS;
    }

    @Override
    public synchronized int cuMemcpyPeer(long dst, MemorySegment dstContext, long src, MemorySegment srcContext, long n) {
        return cuMemcpyDtoD_v2(dst, src, n);
    }

    @Override
    public synchronized int cuMemcpyPeerAsync(long dst, MemorySegment dstContext, long src, MemorySegment srcContext,
            long n, MemorySegment stream) {
        return cuMemcpyDtoDAsync_v2(dst, src, n, stream);
    }


    // ---- modules, functions, launches ----

    private static final java.util.regex.Pattern ENTRY = java.util.regex.Pattern.compile(
            "\\.entry\\s+(\\w+)\\s*\\(([^)]*)\\)", java.util.regex.Pattern.DOTALL);
    private static final java.util.regex.Pattern PARAM = java.util.regex.Pattern.compile(
            "\\.param\\s+\\.(?:align\\s+\\d+\\s+)?\\.?([usfb])(\\d+)\\s+\\w+(?:\\[(\\d+)\\])?");

    @Override
    public synchronized int cuModuleLoadData(MemorySegment out, MemorySegment image) {
        String text = image.reinterpret(1 << 24).getString(0);
        boolean cubin = text.startsWith("\u007fELF");
        if (cubin) {
            // A simulated CUBIN (CubinBuilder) holds PTX-like text in its code section, right after the ELF header.
            text = image.reinterpret(1 << 24).getString(CubinBuilder.TEXT_OFFSET);
        }
        if (!text.contains(".version")) {
            return CudaDriver.CUDA_ERROR_INVALID_IMAGE();
        }
        if (!cubin && (rejectPtx || text.contains(".version 99."))) {
            return CudaDriver.CUDA_ERROR_UNSUPPORTED_PTX_VERSION();
        }
        long h = nextHandle += 16;
        Map<String, FakeFunction> fs = new HashMap<>();
        java.util.regex.Matcher m = ENTRY.matcher(text);
        while (m.find()) {
            List<Integer> sizes = new ArrayList<>();
            java.util.regex.Matcher p = PARAM.matcher(m.group(2));
            while (p.find()) {
                int bits = Integer.parseInt(p.group(2));
                int count = p.group(3) == null ? 1 : Integer.parseInt(p.group(3));
                sizes.add(bits / 8 * count);
            }
            fs.put(m.group(1), new FakeFunction(m.group(1), h, List.copyOf(sizes)));
        }
        modules.put(h, fs);
        out.set(ValueLayout.JAVA_LONG, 0, h);
        return SUCCESS;
    }

    @Override
    public synchronized int cuModuleUnload(MemorySegment module) {
        Map<String, FakeFunction> fs = modules.remove(module.address());
        if (fs == null) {
            return INVALID_HANDLE;
        }
        for (FakeStream s : streams.values()) {
            for (Op op : s.queue) {
                if (op.module == module.address()) {
                    violations.add("cuModuleUnload while a queued launch uses the module");
                }
            }
        }
        for (List<Op> ops : execs.values()) {
            for (Op op : ops) {
                if (op.module == module.address()) {
                    violations.add("cuModuleUnload of a module a live graph executable launches");
                }
            }
        }
        functions.values().removeIf(f -> f.module == module.address());
        return SUCCESS;
    }

    @Override
    public synchronized int cuModuleGetFunction(MemorySegment out, MemorySegment module, MemorySegment name) {
        Map<String, FakeFunction> fs = modules.get(module.address());
        if (fs == null) {
            return INVALID_HANDLE;
        }
        String wanted = name.reinterpret(4096).getString(0);
        functionLookups.add(wanted);
        FakeFunction f = fs.get(wanted);
        if (f == null && anyFunction) {
            f = new FakeFunction(wanted, module.address(), List.of());
            fs.put(wanted, f);
        }
        if (f == null) {
            return CudaDriver.CUDA_ERROR_NOT_FOUND();
        }
        long h = nextHandle += 16;
        functions.put(h, f);
        out.set(ValueLayout.JAVA_LONG, 0, h);
        return SUCCESS;
    }

    @Override
    public synchronized int cuFuncGetAttribute(MemorySegment pi, int attrib, MemorySegment func) {
        FakeFunction f = functions.get(func.address());
        if (f == null) {
            return INVALID_HANDLE;
        }
        int v;
        if (attrib == CudaDriver.CU_FUNC_ATTRIBUTE_NUM_REGS()) {
            v = 32;
        } else if (attrib == CudaDriver.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES()) {
            v = staticShared.getOrDefault(f.name, 0);
        } else if (attrib == CudaDriver.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK()) {
            v = 1024;
        } else if (attrib == CudaDriver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES()) {
            v = f.maxDynamicShared;
        } else if (attrib == CudaDriver.CU_FUNC_ATTRIBUTE_PTX_VERSION() || attrib == CudaDriver.CU_FUNC_ATTRIBUTE_BINARY_VERSION()) {
            v = 90;
        } else {
            v = 0;
        }
        pi.set(ValueLayout.JAVA_INT, 0, v);
        return SUCCESS;
    }

    @Override
    public synchronized int cuFuncSetAttribute(MemorySegment func, int attrib, int value) {
        FakeFunction f = functions.get(func.address());
        if (f == null) {
            return INVALID_HANDLE;
        }
        if (attrib == CudaDriver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES()) {
            if (value + staticShared.getOrDefault(f.name, 0) > defaultAttribute(
                    CudaDriver.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN())) {
                return INVALID_VALUE;
            }
            f.maxDynamicShared = value;
        }
        return SUCCESS;
    }

    @Override
    public synchronized int cuFuncGetParamInfo(MemorySegment func, long index, MemorySegment offset, MemorySegment size) {
        FakeFunction f = functions.get(func.address());
        if (f == null) {
            return INVALID_HANDLE;
        }
        if (index < 0 || index >= f.paramSizes.size()) {
            return INVALID_VALUE;
        }
        long at = 0;
        for (int i = 0; i <= index; i++) {
            int sz = f.paramSizes.get(i);
            int align = Math.min(8, Integer.highestOneBit(Math.max(1, sz)));
            at = (at + align - 1) / align * align;
            if (i < index) {
                at += sz;
            }
        }
        offset.set(ValueLayout.JAVA_LONG, 0, at);
        size.set(ValueLayout.JAVA_LONG, 0, f.paramSizes.get((int) index));
        return SUCCESS;
    }

    @Override
    public synchronized int cuLaunchKernel(MemorySegment f, int gx, int gy, int gz, int bx, int by, int bz, int smem,
            MemorySegment stream, MemorySegment params, MemorySegment extra) {
        return launch(f, gx, gy, gz, bx, by, bz, smem, stream, params, false);
    }

    @Override
    public synchronized int cuLaunchCooperativeKernel(MemorySegment f, int gx, int gy, int gz, int bx, int by, int bz,
            int smem, MemorySegment stream, MemorySegment params) {
        return launch(f, gx, gy, gz, bx, by, bz, smem, stream, params, true);
    }

    @Override
    public synchronized int cuLaunchKernelEx(MemorySegment config, MemorySegment f, MemorySegment params,
            MemorySegment extra) {
        MemorySegment c = config.reinterpret(dev.gatun.cuda.bindings.driver.CUlaunchConfig_st.sizeof());
        return launch(f, dev.gatun.cuda.bindings.driver.CUlaunchConfig_st.gridDimX(c),
                dev.gatun.cuda.bindings.driver.CUlaunchConfig_st.gridDimY(c),
                dev.gatun.cuda.bindings.driver.CUlaunchConfig_st.gridDimZ(c),
                dev.gatun.cuda.bindings.driver.CUlaunchConfig_st.blockDimX(c),
                dev.gatun.cuda.bindings.driver.CUlaunchConfig_st.blockDimY(c),
                dev.gatun.cuda.bindings.driver.CUlaunchConfig_st.blockDimZ(c),
                dev.gatun.cuda.bindings.driver.CUlaunchConfig_st.sharedMemBytes(c),
                dev.gatun.cuda.bindings.driver.CUlaunchConfig_st.hStream(c), params, false);
    }

    private int launch(MemorySegment fn, int gx, int gy, int gz, int bx, int by, int bz, int smem, MemorySegment stream,
            MemorySegment params, boolean cooperative) {
        FakeFunction f = functions.get(fn.address());
        FakeStream s = streams.get(stream.address());
        if (f == null || s == null) {
            return INVALID_HANDLE;
        }
        if ((long) bx * by * bz > 1024 || smem > Math.max(48 * 1024 - staticShared.getOrDefault(f.name, 0), f.maxDynamicShared)) {
            return INVALID_VALUE;
        }
        if (cooperative && (long) gx * gy * gz > 132L * Math.max(1, 2048 / (bx * by * bz))) {
            return CudaDriver.CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE();
        }
        launches++;
        submit(s, kernelOp(new KernelNode(fn.address(), gx, gy, gz, bx, by, bz, smem, readArguments(f, params))));
        return SUCCESS;
    }

    /** The argument values a {@code void**} kernelParams array points at, widened to longs. */
    private long[] readArguments(FakeFunction f, MemorySegment params) {
        MemorySegment ptrs = params.reinterpret(8L * f.paramSizes.size());
        long[] raw = new long[f.paramSizes.size()];
        for (int i = 0; i < raw.length; i++) {
            MemorySegment slot = ptrs.getAtIndex(ValueLayout.ADDRESS, i).reinterpret(8);
            int size = f.paramSizes.get(i);
            raw[i] = size == 8 ? slot.get(ValueLayout.JAVA_LONG, 0) : size == 4 ? slot.get(ValueLayout.JAVA_INT, 0)
                    : size == 2 ? slot.get(ValueLayout.JAVA_SHORT, 0) : slot.get(ValueLayout.JAVA_BYTE, 0);
        }
        return raw;
    }

    /** The operation that runs a kernel as {@code node} describes it. */
    private Op kernelOp(KernelNode node) {
        FakeFunction f = functions.get(node.function());
        Set<Long> uses = new HashSet<>();
        for (int i = 0; i < node.raw().length; i++) {
            DeviceAllocation a = f.paramSizes.get(i) == 8 ? allocationOf(node.raw()[i]) : null;
            if (a != null && node.raw()[i] < a.base + Math.max(1, a.size)) {
                uses.add(a.base);
            }
        }
        FakeKernel body = bodies.get(f.name);
        Op op = new Op(() -> {
            if (body != null) {
                body.run(new LaunchView(node.raw(), node.gx(), node.bx(), node.smem()));
            }
        }, null, 0, uses, Set.of());
        op.module = f.module;
        op.kernel = node;
        return op;
    }

    private final class LaunchView implements FakeKernel.Launch {
        private final long[] raw;
        private final int grid;
        private final int block;
        private final int smem;

        LaunchView(long[] raw, int grid, int block, int smem) {
            this.raw = raw;
            this.grid = grid;
            this.block = block;
            this.smem = smem;
        }

        @Override
        public int gridX() {
            return grid;
        }

        @Override
        public int blockX() {
            return block;
        }

        @Override
        public int sharedMemoryBytes() {
            return smem;
        }

        @Override
        public long pointer(int i) {
            return raw[i];
        }

        @Override
        public int i32(int i) {
            return (int) raw[i];
        }

        @Override
        public long i64(int i) {
            return raw[i];
        }

        @Override
        public float f32(int i) {
            return Float.intBitsToFloat((int) raw[i]);
        }

        @Override
        public double f64(int i) {
            return Double.longBitsToDouble(raw[i]);
        }

        @Override
        public MemorySegment memory(long address, long bytes) {
            MemorySegment m = resolve(address, bytes);
            if (m == null) {
                throw new IllegalStateException("simulated kernel touched unallocated device memory 0x" + Long.toHexString(address));
            }
            return m;
        }
    }

    @Override
    public synchronized int cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(MemorySegment numBlocks, MemorySegment func,
            int blockSize, long dynamicSmem, int flags) {
        numBlocks.set(ValueLayout.JAVA_INT, 0, Math.max(1, 2048 / Math.max(1, blockSize)));
        return SUCCESS;
    }

    @Override
    public synchronized int cuOccupancyMaxPotentialBlockSizeWithFlags(MemorySegment minGridSize, MemorySegment blockSize,
            MemorySegment func, MemorySegment callback, long dynamicSmem, int blockSizeLimit, int flags) {
        int block = blockSizeLimit > 0 ? Math.min(1024, blockSizeLimit) : 1024;
        minGridSize.set(ValueLayout.JAVA_INT, 0, 132 * (2048 / block));
        blockSize.set(ValueLayout.JAVA_INT, 0, block);
        return SUCCESS;
    }

    @Override
    public synchronized int cuOccupancyMaxActiveClusters(MemorySegment numClusters, MemorySegment func, MemorySegment config) {
        MemorySegment c = config.reinterpret(dev.gatun.cuda.bindings.driver.CUlaunchConfig_st.sizeof());
        int attrs = dev.gatun.cuda.bindings.driver.CUlaunchConfig_st.numAttrs(c);
        MemorySegment a = dev.gatun.cuda.bindings.driver.CUlaunchConfig_st.attrs(c)
                .reinterpret(attrs * dev.gatun.cuda.bindings.driver.CUlaunchAttribute_st.sizeof());
        int size = 1;
        for (int i = 0; i < attrs; i++) {
            MemorySegment one = dev.gatun.cuda.bindings.driver.CUlaunchAttribute_st.asSlice(a, i);
            if (dev.gatun.cuda.bindings.driver.CUlaunchAttribute_st.id(one) == CudaDriver.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION()) {
                MemorySegment d = dev.gatun.cuda.bindings.driver.CUlaunchAttributeValue_union.clusterDim(
                        dev.gatun.cuda.bindings.driver.CUlaunchAttribute_st.value(one));
                size = dev.gatun.cuda.bindings.driver.CUlaunchAttributeValue_union.clusterDim.x(d)
                        * dev.gatun.cuda.bindings.driver.CUlaunchAttributeValue_union.clusterDim.y(d)
                        * dev.gatun.cuda.bindings.driver.CUlaunchAttributeValue_union.clusterDim.z(d);
            }
        }
        numClusters.set(ValueLayout.JAVA_INT, 0, 132 / size);
        return SUCCESS;
    }

    @Override
    public synchronized int cuOccupancyAvailableDynamicSMemPerBlock(MemorySegment out, MemorySegment func, int numBlocks,
            int blockSize) {
        out.set(ValueLayout.JAVA_LONG, 0, 227L * 1024 / Math.max(1, numBlocks));
        return SUCCESS;
    }

    // ---- capture and graphs ----

    private final Map<Long, List<Op>> graphs = new HashMap<>();
    private final Map<Long, List<Op>> execs = new HashMap<>();
    private int graphLaunches;
    /** Node handles of every graph ever captured, in capture order (cuGraphGetNodes' order). */
    private final Map<Long, long[]> graphNodes = new HashMap<>();
    /** Which graph, and which position in it, each node handle names. */
    private final Map<Long, NodeRef> nodes = new HashMap<>();
    /** The graph each live executable was instantiated from: the driver names its nodes by that graph's. */
    private final Map<Long, Long> execOrigins = new HashMap<>();

    /** A kernel launch as a graph node describes it: function, dimensions and argument values. */
    private record KernelNode(long function, int gx, int gy, int gz, int bx, int by, int bz, int smem, long[] raw) {
    }

    private record NodeRef(long graph, int index) {
    }

    public synchronized int liveGraphs() {
        return graphs.size();
    }

    public synchronized int liveGraphExecs() {
        return execs.size();
    }

    public synchronized int graphLaunches() {
        return graphLaunches;
    }

    @Override
    public synchronized int cuStreamBeginCapture_v2(MemorySegment stream, int mode) {
        FakeStream s = streams.get(stream.address());
        if (s == null) {
            return INVALID_HANDLE;
        }
        if (s.captured != null) {
            return CudaDriver.CUDA_ERROR_ILLEGAL_STATE();
        }
        s.captured = new ArrayList<>();
        s.captureStatus = CudaDriver.CU_STREAM_CAPTURE_STATUS_ACTIVE();
        return SUCCESS;
    }

    @Override
    public synchronized int cuStreamEndCapture(MemorySegment stream, MemorySegment graph) {
        FakeStream s = streams.get(stream.address());
        if (s == null || s.captured == null) {
            return s == null ? INVALID_HANDLE : CudaDriver.CUDA_ERROR_ILLEGAL_STATE();
        }
        if (s.captureStatus == CudaDriver.CU_STREAM_CAPTURE_STATUS_INVALIDATED()) {
            s.captured = null;
            s.captureStatus = CudaDriver.CU_STREAM_CAPTURE_STATUS_NONE();
            return CudaDriver.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED();
        }
        long h = nextHandle += 16;
        graphs.put(h, List.copyOf(s.captured));
        addNodes(h, s.captured.size());
        s.captured = null;
        s.captureStatus = CudaDriver.CU_STREAM_CAPTURE_STATUS_NONE();
        graph.set(ValueLayout.JAVA_LONG, 0, h);
        return SUCCESS;
    }

    @Override
    public synchronized int cuStreamGetCaptureInfo_v3(MemorySegment stream, MemorySegment status, MemorySegment id,
            MemorySegment graph, MemorySegment deps, MemorySegment edges, MemorySegment count) {
        return CudaDriver.CUDA_ERROR_NOT_SUPPORTED();
    }

    @Override
    public synchronized int cuThreadExchangeStreamCaptureMode(MemorySegment mode) {
        return CudaDriver.CUDA_ERROR_NOT_SUPPORTED();
    }

    @Override
    public synchronized int cuGraphInstantiateWithFlags(MemorySegment exec, MemorySegment graph, long flags) {
        List<Op> ops = graphs.get(graph.address());
        if (ops == null) {
            return INVALID_HANDLE;
        }
        long h = nextHandle += 16;
        execs.put(h, ops);
        execOrigins.put(h, graph.address());
        exec.set(ValueLayout.JAVA_LONG, 0, h);
        return SUCCESS;
    }

    @Override
    public synchronized int cuGraphLaunch(MemorySegment exec, MemorySegment stream) {
        List<Op> ops = execs.get(exec.address());
        FakeStream s = streams.get(stream.address());
        if (ops == null || s == null) {
            return INVALID_HANDLE;
        }
        graphLaunches++;
        for (Op op : ops) {
            Op copy = new Op(op.action, null, 0, op.deviceUses, op.hostUses);
            copy.module = op.module;
            copy.exec = exec.address();
            submit(s, copy);
        }
        return SUCCESS;
    }

    @Override
    public synchronized int cuGraphUpload(MemorySegment exec, MemorySegment stream) {
        return execs.containsKey(exec.address()) && streams.containsKey(stream.address()) ? SUCCESS : INVALID_HANDLE;
    }

    @Override
    public synchronized int cuGraphDestroy(MemorySegment graph) {
        if (execOrigins.containsValue(graph.address())) {
            violations.add("cuGraphDestroy of a graph a live executable was instantiated from");
        }
        return graphs.remove(graph.address()) == null ? INVALID_HANDLE : SUCCESS;
    }

    @Override
    public synchronized int cuGraphExecDestroy(MemorySegment exec) {
        if (!execs.containsKey(exec.address())) {
            return INVALID_HANDLE;
        }
        for (FakeStream s : streams.values()) {
            for (Op op : s.queue) {
                if (op.exec == exec.address()) {
                    violations.add("cuGraphExecDestroy while a queued launch of it still runs");
                }
            }
        }
        execs.remove(exec.address());
        execOrigins.remove(exec.address());
        return SUCCESS;
    }

    @Override
    public synchronized int cuGraphExecUpdate_v2(MemorySegment exec, MemorySegment graph, MemorySegment info) {
        List<Op> ops = graphs.get(graph.address());
        List<Op> current = execs.get(exec.address());
        if (ops == null || current == null) {
            return INVALID_HANDLE;
        }
        if (ops.size() != current.size()) {
            return CudaDriver.CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE(); // topology changed
        }
        execs.put(exec.address(), ops);
        return SUCCESS;
    }

    private void addNodes(long graph, int count) {
        long[] handles = new long[count];
        for (int i = 0; i < count; i++) {
            handles[i] = nextHandle += 16;
            nodes.put(handles[i], new NodeRef(graph, i));
        }
        graphNodes.put(graph, handles);
    }

    /** The captured operation a node of a live graph names; null for a stray node or a destroyed graph's. */
    private Op nodeOp(long node) {
        NodeRef ref = nodes.get(node);
        List<Op> ops = ref == null ? null : graphs.get(ref.graph());
        return ops == null ? null : ops.get(ref.index());
    }

    @Override
    public synchronized int cuGraphGetNodes(MemorySegment graph, MemorySegment out, MemorySegment count) {
        long[] handles = graphs.containsKey(graph.address()) ? graphNodes.get(graph.address()) : null;
        if (handles == null) {
            return INVALID_VALUE;
        }
        MemorySegment n = count.reinterpret(8);
        if (out.address() != 0) {
            long room = Math.min(n.get(ValueLayout.JAVA_LONG, 0), handles.length);
            MemorySegment array = out.reinterpret(8 * room);
            for (int i = 0; i < room; i++) {
                array.setAtIndex(ValueLayout.JAVA_LONG, i, handles[i]);
            }
        }
        n.set(ValueLayout.JAVA_LONG, 0, handles.length);
        return SUCCESS;
    }

    @Override
    public synchronized int cuGraphNodeGetType(MemorySegment node, MemorySegment type) {
        Op op = nodeOp(node.address());
        if (op == null) {
            return INVALID_VALUE;
        }
        // Only kernel nodes are told apart: Gatun inspects nothing else.
        type.reinterpret(4).set(ValueLayout.JAVA_INT, 0, op.kernel != null ? CudaDriver.CU_GRAPH_NODE_TYPE_KERNEL()
                : CudaDriver.CU_GRAPH_NODE_TYPE_EMPTY());
        return SUCCESS;
    }

    @Override
    public synchronized int cuGraphKernelNodeGetParams_v2(MemorySegment node, MemorySegment params) {
        Op op = nodeOp(node.address());
        if (op == null || op.kernel == null) {
            return INVALID_VALUE;
        }
        KernelNode k = op.kernel;
        MemorySegment p = params.reinterpret(CUDA_KERNEL_NODE_PARAMS_v2_st.sizeof());
        CUDA_KERNEL_NODE_PARAMS_v2_st.func(p, MemorySegment.ofAddress(k.function()));
        CUDA_KERNEL_NODE_PARAMS_v2_st.gridDimX(p, k.gx());
        CUDA_KERNEL_NODE_PARAMS_v2_st.gridDimY(p, k.gy());
        CUDA_KERNEL_NODE_PARAMS_v2_st.gridDimZ(p, k.gz());
        CUDA_KERNEL_NODE_PARAMS_v2_st.blockDimX(p, k.bx());
        CUDA_KERNEL_NODE_PARAMS_v2_st.blockDimY(p, k.by());
        CUDA_KERNEL_NODE_PARAMS_v2_st.blockDimZ(p, k.bz());
        CUDA_KERNEL_NODE_PARAMS_v2_st.sharedMemBytes(p, k.smem());
        // Like the driver's, the argument array stays valid as long as the graph (here: the fake).
        MemorySegment values = arena.allocate(8L * Math.max(1, k.raw().length), 8);
        MemorySegment pointers = arena.allocate(ValueLayout.ADDRESS, Math.max(1, k.raw().length));
        for (int i = 0; i < k.raw().length; i++) {
            values.setAtIndex(ValueLayout.JAVA_LONG, i, k.raw()[i]); // little-endian: narrow reads see the low bytes
            pointers.setAtIndex(ValueLayout.ADDRESS, i, values.asSlice(8L * i));
        }
        CUDA_KERNEL_NODE_PARAMS_v2_st.kernelParams(p, pointers);
        CUDA_KERNEL_NODE_PARAMS_v2_st.extra(p, MemorySegment.NULL);
        return SUCCESS;
    }

    /**
     * As the driver: {@code node} must be a node of the graph {@code exec} was instantiated from,
     * and that graph must still be alive; an in-place update does not change which graph that is.
     */
    @Override
    public synchronized int cuGraphExecKernelNodeSetParams_v2(MemorySegment exec, MemorySegment node, MemorySegment params) {
        List<Op> ops = execs.get(exec.address());
        if (ops == null) {
            return INVALID_HANDLE;
        }
        NodeRef ref = nodes.get(node.address());
        Op op = nodeOp(node.address());
        if (op == null || ref.graph() != execOrigins.get(exec.address()) || ops.get(ref.index()).kernel == null) {
            return INVALID_VALUE;
        }
        MemorySegment p = params.reinterpret(CUDA_KERNEL_NODE_PARAMS_v2_st.sizeof());
        FakeFunction f = functions.get(CUDA_KERNEL_NODE_PARAMS_v2_st.func(p).address());
        if (f == null) {
            return INVALID_VALUE;
        }
        KernelNode updated = new KernelNode(CUDA_KERNEL_NODE_PARAMS_v2_st.func(p).address(),
                CUDA_KERNEL_NODE_PARAMS_v2_st.gridDimX(p), CUDA_KERNEL_NODE_PARAMS_v2_st.gridDimY(p),
                CUDA_KERNEL_NODE_PARAMS_v2_st.gridDimZ(p), CUDA_KERNEL_NODE_PARAMS_v2_st.blockDimX(p),
                CUDA_KERNEL_NODE_PARAMS_v2_st.blockDimY(p), CUDA_KERNEL_NODE_PARAMS_v2_st.blockDimZ(p),
                CUDA_KERNEL_NODE_PARAMS_v2_st.sharedMemBytes(p),
                readArguments(f, CUDA_KERNEL_NODE_PARAMS_v2_st.kernelParams(p)));
        List<Op> next = new ArrayList<>(ops);
        next.set(ref.index(), kernelOp(updated));
        execs.put(exec.address(), List.copyOf(next));
        return SUCCESS;
    }

    // ---- simulation ----

    private Set<Long> hostUse(long address) {
        for (Map.Entry<Long, Long> e : hostSizes.entrySet()) {
            if (address >= e.getKey() && address < e.getKey() + Math.max(1, e.getValue())) {
                return Set.of(e.getKey());
            }
        }
        return Set.of();
    }

    private int deviceOp(MemorySegment stream, long dst, long n, java.util.function.Consumer<MemorySegment> action) {
        FakeStream s = streams.get(stream.address());
        MemorySegment d = resolve(dst, n);
        if (s == null || d == null) {
            return s == null ? INVALID_HANDLE : INVALID_VALUE;
        }
        enqueue(s, () -> action.accept(d), Set.of(allocationOf(dst).base), Set.of());
        return SUCCESS;
    }

    private DeviceAllocation allocationOf(long address) {
        Map.Entry<Long, DeviceAllocation> e = device.floorEntry(address);
        return e == null ? null : e.getValue();
    }

    /** The backing memory of [address, address + n), or null when it is not inside one live allocation. */
    private MemorySegment resolve(long address, long n) {
        DeviceAllocation a = allocationOf(address);
        if (a == null || n < 0 || address - a.base + n > a.size) {
            return null;
        }
        return a.backing.asSlice(address - a.base, n);
    }

    private void enqueue(FakeStream s, Runnable action, Set<Long> deviceUses, Set<Long> hostUses) {
        submit(s, new Op(action, null, 0, deviceUses, hostUses));
    }

    /** Queues an operation, or records it into the stream's capture when one is open. */
    private void submit(FakeStream s, Op op) {
        if (s.captured != null) {
            s.captured.add(op);
            return;
        }
        s.queue.add(op);
        pump();
    }

    private FakeStream streamOf(long handle) {
        FakeStream s = streams.get(handle);
        if (s == null) {
            throw new IllegalArgumentException("no simulated stream 0x" + Long.toHexString(handle));
        }
        return s;
    }

    /** Runs every operation that can run: streams not held, waits whose event completed. */
    private void pump() {
        boolean progress = true;
        while (progress) {
            progress = false;
            for (FakeStream s : List.copyOf(streams.values())) {
                while (!s.held && !s.queue.isEmpty()) {
                    Op op = s.queue.peekFirst();
                    if (op.awaited != null && op.awaited.completed < op.awaitedGeneration) {
                        break;
                    }
                    s.queue.pollFirst();
                    op.action.run();
                    progress = true;
                }
            }
        }
    }

    /** A host wait: the GPU finishes everything. */
    private void drainAll() {
        for (FakeStream s : streams.values()) {
            s.held = false;
        }
        pump();
    }
}
