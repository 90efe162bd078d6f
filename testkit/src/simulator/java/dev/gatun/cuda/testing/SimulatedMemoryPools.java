package dev.gatun.cuda.testing;

import static dev.gatun.cuda.testing.FakeDriverApi.INVALID_HANDLE;
import static dev.gatun.cuda.testing.FakeDriverApi.INVALID_VALUE;
import static dev.gatun.cuda.testing.FakeDriverApi.SUCCESS;

import dev.gatun.cuda.bindings.driver.CUmemAccessDesc_st;
import dev.gatun.cuda.bindings.driver.CUmemLocation_st;
import dev.gatun.cuda.bindings.driver.CUmemPoolProps_st;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * The simulated driver's memory pools: each device's default pool, pools from cuMemPoolCreate,
 * their attributes, usage accounting, trim, peer access, and allocation from a pool (memory
 * from {@link SimulatedMemory}, freed through its frees).
 *
 * <p>A pool reserves device memory in {@value #CHUNK}-byte chunks as its use grows; freed
 * memory stays reserved until {@code cuMemPoolTrimTo} (the simulation does not release down to
 * the release threshold at synchronizations, as the real driver does), and counts against the
 * device's memory limit while it is reserved. A created pool's {@code maxSize} caps what it
 * reserves (a driver older than CUDA 12.2 refuses a pool that sets it: its bytes were reserved). Destroying a pool that
 * still has allocations, or a default pool, is recorded as a violation: Gatun destroys a pool
 * only after every allocation from it was freed.
 *
 * <p>Export to another process is played within this one: an exported descriptor names the pool,
 * importing it gives a new pool handle that can only import allocations, and an imported
 * allocation maps the exporter's backing at a new address (freed with cuMemFree). The exporter
 * freeing an allocation before its imports are freed is recorded as a violation (the driver's
 * documented order).
 */
final class SimulatedMemoryPools {

    /** The granularity in which a simulated pool reserves memory. */
    static final long CHUNK = 2 << 20;

    private static final int RELEASE_THRESHOLD = CudaDriver.CU_MEMPOOL_ATTR_RELEASE_THRESHOLD();
    private static final int RESERVED_CURRENT = CudaDriver.CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT();
    private static final int RESERVED_HIGH = CudaDriver.CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH();
    private static final int USED_CURRENT = CudaDriver.CU_MEMPOOL_ATTR_USED_MEM_CURRENT();
    private static final int USED_HIGH = CudaDriver.CU_MEMPOOL_ATTR_USED_MEM_HIGH();
    private static final Set<Integer> REUSE = Set.of(CudaDriver.CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES(),
            CudaDriver.CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC(),
            CudaDriver.CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES());
    private static final int LOCATION_DEVICE = CudaDriver.CU_MEM_LOCATION_TYPE_DEVICE();
    private static final int READ_WRITE = CudaDriver.CU_MEM_ACCESS_FLAGS_PROT_READWRITE();
    private static final int NO_ACCESS = CudaDriver.CU_MEM_ACCESS_FLAGS_PROT_NONE();
    private static final int POSIX_FD = CudaDriver.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR();
    /** The first 8 bytes of simulated pointer export data (the real data is opaque). */
    private static final long POINTER_EXPORT = 0x505452_4950_4353L;

    static final class Pool {
        final int device;
        final boolean deviceDefault;
        long releaseThreshold;
        final Map<Integer, Integer> reuse = new HashMap<>();
        long reserved;
        long reservedHigh;
        long used;
        long usedHigh;
        final Map<Integer, Integer> access = new HashMap<>();
        final Set<Long> allocations = new HashSet<>();
        /** CUmemAllocationHandleType bits the pool was created with. */
        int handleTypes;
        /** For a pool from cuMemPoolImportFromShareableHandle, the exporter's pool; else null. */
        Pool importedFrom;
        /** Exported with cuMemPoolExportToShareableHandle: only then does cuMemPoolExportPointer succeed (as on the H200). */
        boolean exported;
        /** CUmemPoolProps.maxSize: the most it reserves; 0 for no cap. */
        long maxSize;

        Pool(int device, boolean deviceDefault) {
            this.device = device;
            this.deviceDefault = deviceDefault;
            REUSE.forEach(a -> reuse.put(a, 1));
        }
    }

    private final FakeDriverApi gpu;
    private final Map<Long, Pool> pools = new HashMap<>();
    private final Map<Integer, Long> defaults = new HashMap<>();
    /** Exported descriptors (never closed: a simulated descriptor holds nothing). */
    private final Map<Integer, Pool> descriptors = new HashMap<>();
    private int nextDescriptor = 100;
    /** The imported pool of each live imported allocation, by its address in the importer. */
    private final Map<Long, Pool> importedInto = new HashMap<>();
    /** The pool of each live pool allocation, by base address (kept past a pool's destroy). */
    private final Map<Long, Pool> poolOf = new HashMap<>();

    SimulatedMemoryPools(FakeDriverApi gpu) {
        this.gpu = gpu;
    }

    public int cuDeviceGetDefaultMemPool(MemorySegment out, int dev) {
        if (dev < 0 || dev >= gpu.devices.deviceCount) {
            return CudaDriver.CUDA_ERROR_INVALID_DEVICE();
        }
        long h = defaults.computeIfAbsent(dev, d -> {
            long handle = gpu.newHandle();
            pools.put(handle, new Pool(d, true));
            return handle;
        });
        out.set(ValueLayout.JAVA_LONG, 0, h);
        return SUCCESS;
    }

    public int cuMemPoolCreate(MemorySegment out, MemorySegment props) {
        MemorySegment p = props.reinterpret(CUmemPoolProps_st.sizeof());
        MemorySegment location = CUmemPoolProps_st.location(p);
        int device = CUmemLocation_st.id(location);
        if (CUmemPoolProps_st.allocType(p) != CudaDriver.CU_MEM_ALLOCATION_TYPE_PINNED()
                || CUmemLocation_st.type(location) != LOCATION_DEVICE || device < 0 || device >= gpu.devices.deviceCount) {
            return INVALID_VALUE;
        }
        long maxSize = CUmemPoolProps_st.maxSize(p);
        if (maxSize != 0 && gpu.devices.version < 12020) {
            return INVALID_VALUE; // before CUDA 12.2 the field was reserved, and had to be zero
        }
        long h = gpu.newHandle();
        Pool created = new Pool(device, false);
        created.maxSize = maxSize;
        created.handleTypes = CUmemPoolProps_st.handleTypes(p);
        pools.put(h, created);
        out.set(ValueLayout.JAVA_LONG, 0, h);
        return SUCCESS;
    }

    public int cuMemPoolExportToShareableHandle(MemorySegment out, MemorySegment pool, int handleType, long flags) {
        Pool p = pools.get(pool.address());
        if (p == null) {
            return INVALID_HANDLE;
        }
        if (handleType != POSIX_FD || (p.handleTypes & POSIX_FD) == 0 || flags != 0) {
            return INVALID_VALUE;
        }
        int fd = nextDescriptor++;
        descriptors.put(fd, p);
        p.exported = true;
        out.set(ValueLayout.JAVA_INT, 0, fd);
        return SUCCESS;
    }

    public int cuMemPoolImportFromShareableHandle(MemorySegment out, MemorySegment handle, int handleType, long flags) {
        Pool exported = descriptors.get((int) handle.address());
        if (exported == null || handleType != POSIX_FD || flags != 0) {
            return INVALID_VALUE;
        }
        long h = gpu.newHandle();
        Pool imported = new Pool(exported.device, false);
        imported.importedFrom = exported;
        pools.put(h, imported);
        out.set(ValueLayout.JAVA_LONG, 0, h);
        return SUCCESS;
    }

    public int cuMemPoolExportPointer(MemorySegment data, long ptr) {
        Pool p = poolOf.get(ptr);
        if (p == null || (p.handleTypes & POSIX_FD) == 0 || !p.exported) {
            return INVALID_VALUE; // the real driver refuses an allocation of a pool not exported yet, whatever its size
        }
        data.fill((byte) 0);
        data.set(ValueLayout.JAVA_LONG, 0, POINTER_EXPORT);
        data.set(ValueLayout.JAVA_LONG, 8, ptr);
        return SUCCESS;
    }

    public int cuMemPoolImportPointer(MemorySegment out, MemorySegment pool, MemorySegment data) {
        Pool p = pools.get(pool.address());
        if (p == null) {
            return INVALID_HANDLE;
        }
        MemorySegment d = data.reinterpret(64);
        long ptr = d.get(ValueLayout.JAVA_LONG, 8);
        if (d.get(ValueLayout.JAVA_LONG, 0) != POINTER_EXPORT || p.importedFrom == null || poolOf.get(ptr) != p.importedFrom) {
            return INVALID_VALUE;
        }
        SimulatedMemory.Allocation m = gpu.memory.map(gpu.memory.device.get(ptr), true);
        p.allocations.add(m.base);
        importedInto.put(m.base, p);
        out.set(ValueLayout.JAVA_LONG, 0, m.base);
        return SUCCESS;
    }

    /** An imported allocation was freed (cuMemFree in the importer). */
    void importFreed(SimulatedMemory.Allocation m) {
        Pool p = importedInto.remove(m.base);
        if (p != null) {
            p.allocations.remove(m.base);
        }
    }

    public int cuMemPoolDestroy(MemorySegment pool) {
        Pool p = pools.get(pool.address());
        if (p == null) {
            return INVALID_HANDLE;
        }
        if (p.deviceDefault) {
            gpu.violations.add("cuMemPoolDestroy of device " + p.device + "'s default pool");
            return INVALID_VALUE;
        }
        if (!p.allocations.isEmpty()) {
            // The real driver would release the pool after the last free; Gatun waits for them itself.
            gpu.violations.add("cuMemPoolDestroy of a pool with " + p.allocations.size() + " allocations not freed");
        }
        pools.remove(pool.address());
        return SUCCESS;
    }

    public int cuMemPoolSetAttribute(MemorySegment pool, int attr, MemorySegment value) {
        Pool p = pools.get(pool.address());
        if (p == null) {
            return INVALID_HANDLE;
        }
        if (attr == RELEASE_THRESHOLD) {
            p.releaseThreshold = value.get(ValueLayout.JAVA_LONG, 0);
        } else if (REUSE.contains(attr)) {
            p.reuse.put(attr, value.get(ValueLayout.JAVA_INT, 0) != 0 ? 1 : 0);
        } else if ((attr == RESERVED_HIGH || attr == USED_HIGH) && value.get(ValueLayout.JAVA_LONG, 0) == 0) {
            if (attr == RESERVED_HIGH) {
                p.reservedHigh = p.reserved;
            } else {
                p.usedHigh = p.used;
            }
        } else {
            return INVALID_VALUE; // the current counters are read-only; the high-water marks reset only to 0
        }
        return SUCCESS;
    }

    public int cuMemPoolGetAttribute(MemorySegment pool, int attr, MemorySegment value) {
        Pool p = pools.get(pool.address());
        if (p == null) {
            return INVALID_HANDLE;
        }
        if (REUSE.contains(attr)) {
            value.set(ValueLayout.JAVA_INT, 0, p.reuse.get(attr));
            return SUCCESS;
        }
        long v;
        if (attr == RELEASE_THRESHOLD) {
            v = p.releaseThreshold;
        } else if (attr == RESERVED_CURRENT) {
            v = p.reserved;
        } else if (attr == RESERVED_HIGH) {
            v = p.reservedHigh;
        } else if (attr == USED_CURRENT) {
            v = p.used;
        } else if (attr == USED_HIGH) {
            v = p.usedHigh;
        } else {
            return INVALID_VALUE;
        }
        value.set(ValueLayout.JAVA_LONG, 0, v);
        return SUCCESS;
    }

    public int cuMemPoolTrimTo(MemorySegment pool, long minBytesToKeep) {
        Pool p = pools.get(pool.address());
        if (p == null) {
            return INVALID_HANDLE;
        }
        // Only whole chunks nothing uses can go.
        p.reserved = Math.max(chunks(p.used), Math.min(p.reserved, chunks(minBytesToKeep)));
        return SUCCESS;
    }

    public int cuMemPoolSetAccess(MemorySegment pool, MemorySegment map, long count) {
        Pool p = pools.get(pool.address());
        if (p == null) {
            return INVALID_HANDLE;
        }
        MemorySegment descs = map.reinterpret(count * CUmemAccessDesc_st.sizeof());
        for (long i = 0; i < count; i++) {
            MemorySegment d = CUmemAccessDesc_st.asSlice(descs, i);
            MemorySegment location = CUmemAccessDesc_st.location(d);
            int device = CUmemLocation_st.id(location);
            int flags = CUmemAccessDesc_st.flags(d);
            if (CUmemLocation_st.type(location) != LOCATION_DEVICE || device < 0 || device >= gpu.devices.deviceCount
                    || device == p.device && flags != READ_WRITE) {
                return INVALID_VALUE;
            }
            p.access.put(device, flags);
        }
        return SUCCESS;
    }

    public int cuMemPoolGetAccess(MemorySegment flags, MemorySegment memPool, MemorySegment location) {
        Pool p = pools.get(memPool.address());
        if (p == null) {
            return INVALID_HANDLE;
        }
        MemorySegment l = location.reinterpret(CUmemLocation_st.sizeof());
        int device = CUmemLocation_st.id(l);
        if (CUmemLocation_st.type(l) != LOCATION_DEVICE || device < 0 || device >= gpu.devices.deviceCount) {
            return INVALID_VALUE;
        }
        flags.set(ValueLayout.JAVA_INT, 0, device == p.device ? READ_WRITE : p.access.getOrDefault(device, NO_ACCESS));
        return SUCCESS;
    }

    public int cuMemAllocFromPoolAsync(MemorySegment out, long bytes, MemorySegment pool, MemorySegment stream) {
        Pool p = pools.get(pool.address());
        if (p == null || gpu.streams.stream(stream.address()) == null) {
            return INVALID_HANDLE;
        }
        long reservedAfter = Math.max(p.reserved, chunks(p.used + bytes));
        if (p.maxSize > 0 && reservedAfter > p.maxSize) {
            return FakeDriverApi.OUT_OF_MEMORY;
        }
        long idleDelta = (reservedAfter - p.used - bytes) - (p.reserved - p.used);
        int r = gpu.memory.allocateDevice(out, bytes, 0, p.device, idleDelta);
        if (r != SUCCESS) {
            return r;
        }
        long base = out.get(ValueLayout.JAVA_LONG, 0);
        p.allocations.add(base);
        poolOf.put(base, p);
        p.used += bytes;
        p.usedHigh = Math.max(p.usedHigh, p.used);
        p.reserved = Math.max(p.reserved, chunks(p.used));
        p.reservedHigh = Math.max(p.reservedHigh, p.reserved);
        return SUCCESS;
    }

    /** A device allocation was freed (its stream-ordered free ran, or a cuMemFree): returns it to its pool. */
    void released(SimulatedMemory.Allocation a) {
        Pool p = poolOf.remove(a.base);
        if (p != null) {
            p.allocations.remove(a.base);
            p.used -= a.size;
        }
    }

    /** Bytes the pools reserve and do not use: taken from the device, as allocations are. */
    long idleReserved() {
        long idle = 0;
        for (Pool p : pools.values()) {
            idle += p.reserved - p.used;
        }
        return idle;
    }

    int created() {
        return (int) pools.values().stream().filter(p -> !p.deviceDefault).count();
    }

    int liveAllocations() {
        return poolOf.size();
    }

    private static long chunks(long bytes) {
        return (bytes + CHUNK - 1) / CHUNK * CHUNK;
    }
}
