package dev.gatun.cuda.testing;

import static dev.gatun.cuda.testing.FakeDriverApi.INVALID_HANDLE;
import static dev.gatun.cuda.testing.FakeDriverApi.INVALID_VALUE;
import static dev.gatun.cuda.testing.FakeDriverApi.OUT_OF_MEMORY;
import static dev.gatun.cuda.testing.FakeDriverApi.SUCCESS;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Consumer;

/**
 * The simulated driver's device and pinned host memory, memsets and copies. Device memory is
 * host memory at fake device addresses. A free is checked against the work still queued and the
 * live graph executables: freeing what they use is recorded as a violation, not a corruption. A
 * stream-ordered free is checked when the GPU runs it, as the driver orders it: work on another
 * stream that the freeing stream waited for has run by then, work it did not wait for may not.
 */
final class SimulatedMemory {

    static final class Allocation {
        final long base;
        final long size;
        final MemorySegment backing;
        /** The backing's arena; null for an IPC mapping, which shares its exporter's backing. */
        final Arena arena;
        /** The context it was allocated in (0 for a memory pool's, which belong to a device), and its device. */
        final long context;
        final int deviceOrdinal;
        /** For an IPC mapping (cuIpcOpenMemHandle, or cuMemPoolImportPointer), the allocation it maps; else null. */
        final Allocation mapped;
        /** A mapping made by cuMemPoolImportPointer, freed with cuMemFree (not cuIpcCloseMemHandle). */
        boolean poolImport;
        /** Open IPC mappings of this allocation. */
        int mappings;
        /** An allocation node's address ({@link SimulatedGraphMemory}): memory only while {@link #backed}. */
        boolean graph;
        /** For a graph allocation: allocated now, as the GPU runs (an allocation node ran, no free yet). */
        boolean backed;
        /** For a graph allocation: a launch queued its allocation node and no free was queued since (the host's view). */
        boolean outstanding;
        /** For a graph allocation: counted in the device's reserved graph memory (until a trim). */
        boolean reserved;

        Allocation(long base, long size, Arena arena, long context, int deviceOrdinal) {
            this.base = base;
            this.size = size;
            this.arena = arena;
            this.context = context;
            this.deviceOrdinal = deviceOrdinal;
            this.backing = arena.allocate(Math.max(1, size), 256);
            this.mapped = null;
        }

        private Allocation(long base, Allocation mapped) {
            this.base = base;
            this.size = mapped.size;
            this.arena = null;
            this.backing = mapped.backing;
            this.mapped = mapped;
            // One process plays both sides here: the mapping is in the exporter's context.
            this.context = mapped.context;
            this.deviceOrdinal = mapped.deviceOrdinal;
        }
    }

    private final FakeDriverApi gpu;
    /** Device allocations by base address. */
    final TreeMap<Long, Allocation> device = new TreeMap<>();
    /** Pinned host allocations by address. */
    final Map<Long, Arena> host = new HashMap<>();
    private final Map<Long, Long> hostSizes = new HashMap<>();
    /** The cuMemHostAlloc flags of each pinned allocation (DEVICEMAP: mapped into the device). */
    final Map<Long, Integer> hostFlags = new HashMap<>();
    long memoryLimit = Long.MAX_VALUE;
    long deviceBytes;
    private long nextDevice = 0x7f00_0000_0000L;

    SimulatedMemory(FakeDriverApi gpu) {
        this.gpu = gpu;
    }

    public int cuMemGetInfo_v2(MemorySegment free, MemorySegment total) {
        // A memory limit stands for a smaller device; memory pools' reserved, unused bytes are taken too.
        long usable = Math.min(gpu.devices.totalMemory, memoryLimit);
        free.set(ValueLayout.JAVA_LONG, 0, Math.max(0, usable - deviceBytes - gpu.pools.idleReserved()));
        total.set(ValueLayout.JAVA_LONG, 0, gpu.devices.totalMemory);
        return SUCCESS;
    }

    /**
     * Whether {@code bytes} more fit under the memory limit, with the pools' reserved, unused
     * bytes counted, changed by {@code idleDelta} (a pool allocation may use some, or reserve more).
     */
    boolean fits(long bytes, long idleDelta) {
        return deviceBytes + gpu.pools.idleReserved() + idleDelta + bytes <= memoryLimit;
    }

    public int cuMemAlloc_v2(MemorySegment out, long bytes) {
        checkNoGlobalCapture("cuMemAlloc", gpu.contexts.current());
        return allocateDevice(out, bytes, gpu.contexts.current(), gpu.devices.deviceOf(gpu.contexts.current()));
    }

    /**
     * Records a violation when {@code function}, a call that may synchronize the device, runs while
     * a global-mode capture is open on {@code context}: the driver would invalidate that capture.
     */
    private void checkNoGlobalCapture(String function, long context) {
        SimulatedStreams.Stream capturing = gpu.streams.globalCaptureOpen(context);
        if (capturing != null) {
            gpu.violations.add(function + " while a global-mode capture is open on a stream of its context: the "
                    + "driver invalidates that capture (the capture gate must keep the two apart)");
        }
    }

    public int cuMemAllocAsync(MemorySegment out, long bytes, MemorySegment stream) {
        SimulatedStreams.Stream s = gpu.streams.stream(stream.address());
        if (s == null) {
            return INVALID_HANDLE;
        }
        if (s.captured != null) {
            return gpu.graphMemory.allocationNode(out, bytes, s);
        }
        return allocateDevice(out, bytes, s.context, gpu.devices.deviceOf(s.context));
    }

    /** An allocation node's allocation: at a fresh address, not backed, not counted in the device's bytes. */
    Allocation graphAllocation(long bytes, long context, int deviceOrdinal) {
        long base = nextDevice;
        nextDevice += (bytes + 511) & ~511L;
        Allocation a = new Allocation(base, bytes, Arena.ofShared(), context, deviceOrdinal);
        a.graph = true;
        device.put(base, a);
        return a;
    }

    /** Records a violation for each graph allocation {@code op} uses while it is not allocated (called as it runs). */
    void checkBacked(StreamOp op) {
        for (long base : op.deviceUses) {
            Allocation a = device.get(base);
            if (a != null && a.graph && !a.backed) {
                gpu.violations.add("work used graph allocation 0x" + Long.toHexString(base) + " while it was not allocated");
            }
        }
    }

    /** A device allocation of {@code context} on {@code deviceOrdinal} at a fresh address, written to {@code out}. */
    int allocateDevice(MemorySegment out, long bytes, long context, int deviceOrdinal) {
        return allocateDevice(out, bytes, context, deviceOrdinal, 0);
    }

    /** As {@link #allocateDevice(MemorySegment, long, long, int)}, for a pool whose reserved, unused bytes change by {@code idleDelta}. */
    int allocateDevice(MemorySegment out, long bytes, long context, int deviceOrdinal, long idleDelta) {
        if (bytes <= 0) {
            return INVALID_VALUE;
        }
        if (!fits(bytes, idleDelta)) {
            return OUT_OF_MEMORY;
        }
        long base = nextDevice;
        nextDevice += (bytes + 511) & ~511L;
        device.put(base, new Allocation(base, bytes, Arena.ofShared(), context, deviceOrdinal));
        deviceBytes += bytes;
        out.set(ValueLayout.JAVA_LONG, 0, base);
        return SUCCESS;
    }

    public int cuPointerGetAttributes(int count, MemorySegment attributes, MemorySegment data, long ptr) {
        Map.Entry<Long, Allocation> e = device.floorEntry(ptr);
        Allocation a = e == null || ptr >= e.getKey() + e.getValue().size ? null : e.getValue();
        boolean pinned = host.containsKey(ptr);
        MemorySegment ids = attributes.reinterpret(4L * count);
        MemorySegment slots = data.reinterpret(8L * count);
        for (int i = 0; i < count; i++) {
            int attribute = ids.getAtIndex(ValueLayout.JAVA_INT, i);
            MemorySegment value = slots.getAtIndex(ValueLayout.ADDRESS, i).reinterpret(8);
            if (attribute == CudaDriver.CU_POINTER_ATTRIBUTE_CONTEXT()) {
                value.set(ValueLayout.JAVA_LONG, 0, a == null ? 0 : a.context);
            } else if (attribute == CudaDriver.CU_POINTER_ATTRIBUTE_MEMORY_TYPE()) {
                value.set(ValueLayout.JAVA_INT, 0, a != null ? CudaDriver.CU_MEMORYTYPE_DEVICE()
                        : pinned ? CudaDriver.CU_MEMORYTYPE_HOST() : 0);
            } else if (attribute == CudaDriver.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL()) {
                value.set(ValueLayout.JAVA_INT, 0, a == null ? -1 : a.deviceOrdinal);
            } else if (attribute == CudaDriver.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR()) {
                value.set(ValueLayout.JAVA_LONG, 0, a == null ? 0 : a.base);
            } else if (attribute == CudaDriver.CU_POINTER_ATTRIBUTE_RANGE_SIZE()) {
                value.set(ValueLayout.JAVA_LONG, 0, a == null ? 0 : a.size);
            } else {
                return INVALID_VALUE; // not simulated
            }
        }
        return SUCCESS;
    }

    public int cuMemFree_v2(long address) {
        Allocation a = device.get(address);
        if (a == null) {
            return INVALID_VALUE;
        }
        checkNoGlobalCapture("cuMemFree", a.context);
        if (a.graph) {
            return gpu.graphMemory.freeOutside(a, null, "cuMemFree");
        }
        if (a.poolImport) {
            gpu.pools.importFreed(a);
            return unmap(address, "cuMemFree");
        }
        if (a.mapped != null) {
            gpu.violations.add("cuMemFree of IPC mapping 0x" + Long.toHexString(address) + " (unmap it with cuIpcCloseMemHandle)");
            return INVALID_VALUE;
        }
        if (a.mappings > 0) {
            gpu.violations.add("cuMemFree of 0x" + Long.toHexString(address) + " while " + a.mappings + " IPC mappings of it are open");
        }
        for (SimulatedStreams.Stream s : gpu.streams.all()) {
            if (usesDevice(s, a)) {
                gpu.violations.add("cuMemFree of 0x" + Long.toHexString(address) + " while queued work still uses it");
            }
        }
        checkNotBaked(a, "cuMemFree");
        release(a);
        return SUCCESS;
    }

    public int cuMemFreeAsync(long address, MemorySegment stream) {
        SimulatedStreams.Stream s = gpu.streams.stream(stream.address());
        if (s == null) {
            return INVALID_HANDLE;
        }
        Allocation a = device.get(address);
        if (a == null || a.mapped != null) {
            return INVALID_VALUE;
        }
        if (a.graph) {
            return s.captured != null ? gpu.graphMemory.freeNode(a, s) : gpu.graphMemory.freeOutside(a, s, "cuMemFreeAsync");
        }
        if (a.mappings > 0) {
            gpu.violations.add("cuMemFreeAsync of 0x" + Long.toHexString(address) + " while " + a.mappings
                    + " imports of it are not freed (importers free first)");
        }
        checkNotBaked(a, "cuMemFreeAsync");
        // Stream-ordered: legal while earlier work on this stream uses it (it runs first), not
        // while work on another stream that this one did not wait for does: checked as it runs.
        gpu.streams.enqueue(s, () -> {
            checkUnused(a, "a stream-ordered free (cuMemFreeAsync) of");
            release(a);
        }, Set.of(), Set.of());
        return SUCCESS;
    }

    /**
     * Records a violation when work submitted before the free that is running now, on any stream,
     * uses {@code a} and has not run yet: {@code what} (e.g. "a stream-ordered free of") frees it
     * under that work. Work submitted after the free is not this free's to check (a graph's
     * allocation node allocates the address again for it; for other memory it fails as it runs).
     */
    void checkUnused(Allocation a, String what) {
        long free = gpu.streams.running();
        for (SimulatedStreams.Stream other : gpu.streams.all()) {
            for (StreamOp op : other.queue) {
                if (op.sequence < free && op.deviceUses.contains(a.base)) {
                    gpu.violations.add(what + " 0x" + Long.toHexString(a.base) + " ran while queued work still uses it");
                    return;
                }
            }
        }
    }

    /** Records a violation when a live graph executable's node uses {@code a} ({@code call} frees it). */
    private void checkNotBaked(Allocation a, String call) {
        for (List<StreamOp> ops : gpu.graphs.execs.values()) {
            for (StreamOp op : ops) {
                if (op.deviceUses.contains(a.base)) {
                    gpu.violations.add(call + " of 0x" + Long.toHexString(a.base) + " baked into a live graph executable");
                    return;
                }
            }
        }
    }

    /** Whether {@code use} (an element of a {@link StreamOp#deviceUses}) names memory that exists now: an allocation or a mapping. */
    boolean exists(long use) {
        return device.containsKey(use) || gpu.virtualMemory.mappedAt(use);
    }

    /** Maps {@code a} at a fresh address (cuIpcOpenMemHandle, or cuMemPoolImportPointer when {@code poolImport}). */
    Allocation map(Allocation a, boolean poolImport) {
        long base = nextDevice;
        nextDevice += (a.size + 511) & ~511L;
        Allocation m = new Allocation(base, a);
        m.poolImport = poolImport;
        device.put(base, m);
        a.mappings++;
        return m;
    }

    /** Unmaps a mapping ({@code call}): a result, with a violation if work still uses it. */
    int unmap(long address, String call) {
        Allocation m = device.get(address);
        if (m == null || m.mapped == null) {
            return INVALID_VALUE;
        }
        for (SimulatedStreams.Stream s : gpu.streams.all()) {
            if (usesDevice(s, m)) {
                gpu.violations.add(call + " of 0x" + Long.toHexString(address) + " while queued work still uses it");
            }
        }
        device.remove(address);
        m.mapped.mappings--;
        return SUCCESS;
    }

    /** IPC mappings open now. */
    int mappings() {
        return (int) device.values().stream().filter(a -> a.mapped != null).count();
    }

    private void release(Allocation a) {
        if (device.remove(a.base) != null) {
            deviceBytes -= a.size;
            a.arena.close();
            gpu.pools.released(a);
        }
    }

    private static boolean usesDevice(SimulatedStreams.Stream s, Allocation a) {
        for (StreamOp op : s.queue) {
            if (op.deviceUses.contains(a.base)) {
                return true;
            }
        }
        return false;
    }

    public int cuMemHostAlloc(MemorySegment out, long bytes, int flags) {
        Arena a = Arena.ofShared();
        MemorySegment m = a.allocate(bytes, 4096);
        host.put(m.address(), a);
        hostSizes.put(m.address(), bytes);
        hostFlags.put(m.address(), flags);
        out.set(ValueLayout.JAVA_LONG, 0, m.address());
        return SUCCESS;
    }

    public int cuMemFreeHost(MemorySegment p) {
        Arena a = host.get(p.address());
        if (a == null) {
            return INVALID_VALUE;
        }
        for (SimulatedStreams.Stream s : gpu.streams.all()) {
            for (StreamOp op : s.queue) {
                if (op.hostUses.contains(p.address())) {
                    gpu.violations.add("cuMemFreeHost of pinned memory a queued transfer still uses");
                    return INVALID_VALUE; // keep the memory: the queued copy would touch it
                }
            }
        }
        host.remove(p.address());
        hostSizes.remove(p.address());
        hostFlags.remove(p.address());
        a.close();
        return SUCCESS;
    }

    // ---- memset ----

    public int cuMemsetD8Async(long dst, byte value, long n, MemorySegment stream) {
        return submit(stream, memsetOp(dst, value, 1, n));
    }

    public int cuMemsetD32Async(long dst, int value, long n, MemorySegment stream) {
        return submit(stream, memsetOp(dst, value, 4, n));
    }

    private static void fill32(MemorySegment m, int value) {
        for (long i = 0; i < m.byteSize(); i += 4) {
            m.set(ValueLayout.JAVA_INT_UNALIGNED, i, value);
        }
    }

    /** Queues {@code op} on {@code stream}; null: its memory was not allocated. */
    private int submit(MemorySegment stream, StreamOp op) {
        SimulatedStreams.Stream s = gpu.streams.stream(stream.address());
        if (s == null || op == null) {
            return s == null ? INVALID_HANDLE : INVALID_VALUE;
        }
        gpu.streams.submit(s, op);
        return SUCCESS;
    }

    /**
     * The operation that runs {@code action} on the device memory [dst, dst + n) (a memset, or a
     * memset node), or null when the range is not inside one live allocation.
     */
    private StreamOp setOp(long dst, long n, Consumer<MemorySegment> action) {
        MemorySegment d = resolve(dst, n);
        return d == null ? null : new StreamOp(() -> action.accept(d), uses(dst, n), Set.of());
    }

    /** A memset of {@code width} elements of {@code elementSize} bytes (1 or 4) to {@code value}, or null as {@link #setOp}. */
    StreamOp memsetOp(long dst, int value, int elementSize, long width) {
        return switch (elementSize) {
            case 1 -> setOp(dst, width, m -> m.fill((byte) value));
            case 4 -> setOp(dst, width * 4, m -> fill32(m, value));
            default -> null;
        };
    }

    /** The operation copying [src, src + n) to [dst, dst + n) on the device, or null when a range is not allocated. */
    StreamOp copyOp(long dst, long src, long n) {
        MemorySegment d = resolve(dst, n);
        MemorySegment from = resolve(src, n);
        if (d == null || from == null) {
            return null;
        }
        Set<Long> touched = new HashSet<>(uses(dst, n));
        touched.addAll(uses(src, n));
        return new StreamOp(() -> MemorySegment.copy(from, 0, d, 0, n), touched, Set.of());
    }

    /**
     * The operation of a copy node between host and device: each side a device range, or (its
     * flag set) a range inside one pinned host allocation, which is all the driver can reach at a
     * graph launch that Gatun hands it; null when a range is neither.
     */
    StreamOp nodeCopyOp(long dst, boolean dstHost, long src, boolean srcHost, long n) {
        if (!dstHost && !srcHost) {
            return copyOp(dst, src, n);
        }
        MemorySegment d = dstHost ? pinned(dst, n) : resolve(dst, n);
        MemorySegment from = srcHost ? pinned(src, n) : resolve(src, n);
        if (d == null || from == null) {
            return null;
        }
        Set<Long> device = new HashSet<>();
        Set<Long> host = new HashSet<>();
        (dstHost ? host : device).addAll(dstHost ? hostUse(dst) : uses(dst, n));
        (srcHost ? host : device).addAll(srcHost ? hostUse(src) : uses(src, n));
        return new StreamOp(() -> MemorySegment.copy(from, 0, d, 0, n), device, host);
    }

    /** The raw memory of [address, address + n) when it lies inside one live pinned allocation; else null. */
    private MemorySegment pinned(long address, long n) {
        for (Map.Entry<Long, Long> e : hostSizes.entrySet()) {
            if (address >= e.getKey() && n > 0 && address + n <= e.getKey() + e.getValue()) {
                return MemorySegment.ofAddress(address).reinterpret(n);
            }
        }
        return null;
    }

    // ---- copies ----

    public int cuMemcpyHtoDAsync_v2(long dst, MemorySegment src, long n, MemorySegment stream) {
        SimulatedStreams.Stream s = gpu.streams.stream(stream.address());
        MemorySegment d = resolve(dst, n);
        if (s == null || d == null || !src.isNative()) {
            return s == null ? INVALID_HANDLE : INVALID_VALUE;
        }
        // The DMA engine sees raw memory, not the caller's Java view (whose arena may close first).
        MemorySegment from = MemorySegment.ofAddress(src.address()).reinterpret(n);
        gpu.streams.enqueue(s, () -> MemorySegment.copy(from, 0, d, 0, n), uses(dst, n), hostUse(src.address()));
        return SUCCESS;
    }

    public int cuMemcpyDtoHAsync_v2(MemorySegment dst, long src, long n, MemorySegment stream) {
        SimulatedStreams.Stream s = gpu.streams.stream(stream.address());
        MemorySegment from = resolve(src, n);
        if (s == null || from == null || !dst.isNative()) {
            return s == null ? INVALID_HANDLE : INVALID_VALUE;
        }
        MemorySegment to = MemorySegment.ofAddress(dst.address()).reinterpret(n);
        gpu.streams.enqueue(s, () -> MemorySegment.copy(from, 0, to, 0, n), uses(src, n), hostUse(dst.address()));
        return SUCCESS;
    }

    public int cuMemcpyDtoDAsync_v2(long dst, long src, long n, MemorySegment stream) {
        return submit(stream, copyOp(dst, src, n));
    }

    public int cuMemcpyPeerAsync(long dst, MemorySegment dstContext, long src, MemorySegment srcContext, long n,
            MemorySegment stream) {
        return cuMemcpyDtoDAsync_v2(dst, src, n, stream);
    }

    // ---- addresses ----

    /** The pinned allocation holding {@code address}, as a use set (empty for pageable memory). */
    Set<Long> hostUse(long address) {
        for (Map.Entry<Long, Long> e : hostSizes.entrySet()) {
            if (address >= e.getKey() && address < e.getKey() + Math.max(1, e.getValue())) {
                return Set.of(e.getKey());
            }
        }
        return Set.of();
    }

    /**
     * The pinned allocation mapped into the device (DEVICEMAP) holding [address, address + n), as
     * the device sees it at the same address (unified addressing), or null.
     */
    MemorySegment resolveMapped(long address, long n) {
        for (Map.Entry<Long, Long> e : hostSizes.entrySet()) {
            if ((hostFlags.get(e.getKey()) & CudaDriver.CU_MEMHOSTALLOC_DEVICEMAP()) != 0 && address >= e.getKey()
                    && n >= 0 && address + n <= e.getKey() + e.getValue()) {
                return MemorySegment.ofAddress(address).reinterpret(n);
            }
        }
        return null;
    }

    /**
     * The raw memory of [address, address + n) when it lies inside one live pinned host
     * allocation ({@code cuMemHostAlloc}), as the DMA engine sees it; null otherwise (pageable
     * memory, a freed allocation, a range past its end).
     */
    MemorySegment resolvePinned(long address, long n) {
        for (Map.Entry<Long, Long> e : hostSizes.entrySet()) {
            long base = e.getKey();
            if (address >= base && address < base + Math.max(1, e.getValue())) {
                return n >= 0 && address - base + n <= Math.max(1, e.getValue())
                        ? MemorySegment.ofAddress(address).reinterpret(n) : null;
            }
        }
        return null;
    }

    /** The device allocation at or below {@code address}, or null. */
    Allocation allocationOf(long address) {
        Map.Entry<Long, Allocation> e = device.floorEntry(address);
        return e == null ? null : e.getValue();
    }

    /**
     * The backing memory of [address, address + n), or null when it is not inside one live
     * allocation, nor mapped and accessible in a reserved range ({@link SimulatedVirtualMemory}).
     */
    MemorySegment resolve(long address, long n) {
        Allocation a = allocationOf(address);
        if (a == null || address >= a.base + Math.max(1, a.size)) {
            return n < 0 ? null : gpu.virtualMemory.resolve(address, n);
        }
        if (n < 0 || address - a.base + n > a.size) {
            return null;
        }
        return a.backing.asSlice(address - a.base, n);
    }

    /**
     * What an operation on [address, address + n) uses, to check frees and unmaps against: the base
     * of the allocation holding it, or the addresses of the mappings it spans. Call after
     * {@link #resolve} found the range.
     */
    Set<Long> uses(long address, long n) {
        Allocation a = allocationOf(address);
        if (a != null && address < a.base + Math.max(1, a.size)) {
            return Set.of(a.base);
        }
        return gpu.virtualMemory.mappingsUnder(address, n);
    }
}
