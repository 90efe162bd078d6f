package dev.gatun.cuda.testing;

import static dev.gatun.cuda.testing.FakeDriverApi.INVALID_HANDLE;
import static dev.gatun.cuda.testing.FakeDriverApi.INVALID_VALUE;
import static dev.gatun.cuda.testing.FakeDriverApi.OUT_OF_MEMORY;
import static dev.gatun.cuda.testing.FakeDriverApi.SUCCESS;

import dev.gatun.cuda.bindings.driver.CUmemAccessDesc_st;
import dev.gatun.cuda.bindings.driver.CUmemAllocationProp_st;
import dev.gatun.cuda.bindings.driver.CUmemLocation_st;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The simulated driver's virtual memory management: reserved address ranges, physical
 * allocations ({@code cuMemCreate}) and their mappings. A reservation is backed by host address
 * space reserved lazily ({@code mmap} with {@code MAP_NORESERVE}: pages cost memory only once
 * written), so copies and kernels see a mapped range as one contiguous range, however many
 * mappings make it up. Device memory is reachable only where it is mapped and access was set;
 * a physical allocation keeps its bytes while unmapped. Unmapping what queued work or a live
 * graph executable still uses, and freeing a range with mappings left (which unmaps them), are violations.
 *
 * <p>Limits of the simulation: a physical allocation is mapped whole (offset 0) at one place at a
 * time, and an unmap names exactly one mapping. A kernel's use of a range counts the mapping its
 * pointer argument falls in (a kernel's extent is unknown), so an unmap under a kernel that
 * reaches past its pointer's mapping goes unnoticed here.
 */
final class SimulatedVirtualMemory {

    private static final int LOCATION_DEVICE = CudaDriver.CU_MEM_LOCATION_TYPE_DEVICE();
    private static final int READ_WRITE = CudaDriver.CU_MEM_ACCESS_FLAGS_PROT_READWRITE();
    private static final int MINIMUM = CudaDriver.CU_MEM_ALLOC_GRANULARITY_MINIMUM();
    private static final MethodHandle MMAP;
    private static final MethodHandle MADVISE;

    static {
        Linker linker = Linker.nativeLinker();
        MMAP = linker.downcallHandle(linker.defaultLookup().find("mmap").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
                        ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG));
        MADVISE = linker.downcallHandle(linker.defaultLookup().find("madvise").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
                        ValueLayout.JAVA_INT));
    }

    static final class Reservation {
        final long base;
        final long size;
        /** Host pages standing for the range, reserved at the first mapping; null until then. */
        MemorySegment backing;
        /** Mappings by address. */
        final TreeMap<Long, Mapping> mappings = new TreeMap<>();

        Reservation(long base, long size) {
            this.base = base;
            this.size = size;
        }
    }

    static final class Physical {
        final long handle;
        final long size;
        final Arena arena = Arena.ofShared();
        /** Its bytes while unmapped (mapped, they live in the reservation's backing). */
        final MemorySegment contents;
        Mapping mapping;
        boolean released;

        Physical(long handle, long size) {
            this.handle = handle;
            this.size = size;
            this.contents = arena.allocate(size, 256);
        }
    }

    record Mapping(Reservation reservation, long address, long size, Physical physical, boolean[] accessible) {
        MemorySegment bytes() {
            return reservation.backing.asSlice(address - reservation.base, size);
        }
    }

    private final FakeDriverApi gpu;
    final TreeMap<Long, Reservation> reservations = new TreeMap<>();
    final Map<Long, Physical> physical = new HashMap<>();
    long minimumGranularity = 2 << 20;
    long recommendedGranularity = 2 << 20;
    /** Reservations beyond this many bytes in all fail with CUDA_ERROR_OUT_OF_MEMORY (address space is short). */
    long addressSpaceLimit = Long.MAX_VALUE;
    private long reservedBytes;
    private long nextAddress = 0x6000_0000_0000L;

    SimulatedVirtualMemory(FakeDriverApi gpu) {
        this.gpu = gpu;
    }

    public int cuMemGetAllocationGranularity(MemorySegment granularity, MemorySegment prop, int option) {
        if (!onDevice(prop)) {
            return INVALID_VALUE;
        }
        granularity.reinterpret(8).set(ValueLayout.JAVA_LONG, 0, option == MINIMUM ? minimumGranularity
                : recommendedGranularity);
        return SUCCESS;
    }

    public int cuMemAddressReserve(MemorySegment ptr, long size, long alignment, long addr, long flags) {
        if (size <= 0 || size % minimumGranularity != 0 || addr != 0 || flags != 0) {
            return INVALID_VALUE;
        }
        if (size > addressSpaceLimit - reservedBytes) {
            return OUT_OF_MEMORY;
        }
        long align = Math.max(alignment, minimumGranularity);
        long base = (nextAddress + align - 1) / align * align;
        nextAddress = base + size;
        reservations.put(base, new Reservation(base, size));
        reservedBytes += size;
        ptr.reinterpret(8).set(ValueLayout.JAVA_LONG, 0, base);
        return SUCCESS;
    }

    public int cuMemAddressFree(long ptr, long size) {
        Reservation r = reservations.get(ptr);
        if (r == null || r.size != size) {
            return INVALID_VALUE;
        }
        if (!r.mappings.isEmpty()) {
            // Recorded, then freed with its mappings, so that one misuse does not leak everything after it.
            gpu.violations.add("cuMemAddressFree of 0x" + Long.toHexString(ptr) + " with " + r.mappings.size()
                    + " mappings left");
            for (Mapping m : List.copyOf(r.mappings.values())) {
                cuMemUnmap(m.address(), m.size());
            }
        }
        reservations.remove(ptr);
        reservedBytes -= size;
        if (r.backing != null) {
            discardHost(r.backing);
        }
        return SUCCESS;
    }

    public int cuMemCreate(MemorySegment handle, long size, MemorySegment prop, long flags) {
        if (size <= 0 || size % minimumGranularity != 0 || flags != 0 || !onDevice(prop)) {
            return INVALID_VALUE;
        }
        if (!gpu.memory.fits(size, 0)) {
            return OUT_OF_MEMORY;
        }
        Physical p = new Physical(gpu.newHandle(), size);
        physical.put(p.handle, p);
        gpu.memory.deviceBytes += size;
        handle.reinterpret(8).set(ValueLayout.JAVA_LONG, 0, p.handle);
        return SUCCESS;
    }

    public int cuMemRelease(long handle) {
        Physical p = physical.get(handle);
        if (p == null || p.released) {
            return INVALID_HANDLE;
        }
        p.released = true; // the memory goes once its last mapping does
        if (p.mapping == null) {
            free(p);
        }
        return SUCCESS;
    }

    public int cuMemMap(long ptr, long size, long offset, long handle, long flags) {
        Physical p = physical.get(handle);
        if (p == null || p.released) {
            return INVALID_HANDLE;
        }
        Reservation r = reservationOf(ptr);
        if (offset != 0 || flags != 0 || size != p.size || p.mapping != null || r == null
                || ptr + size > r.base + r.size || overlaps(r, ptr, size)) {
            return INVALID_VALUE;
        }
        if (r.backing == null) {
            r.backing = reserveHost(r.size);
            if (r.backing == null) {
                return OUT_OF_MEMORY;
            }
        }
        Mapping m = new Mapping(r, ptr, size, p, new boolean[1]);
        MemorySegment.copy(p.contents, 0, m.bytes(), 0, size);
        r.mappings.put(ptr, m);
        p.mapping = m;
        return SUCCESS;
    }

    public int cuMemUnmap(long ptr, long size) {
        Reservation r = reservationOf(ptr);
        Mapping m = r == null ? null : r.mappings.get(ptr);
        if (m == null || m.size != size) {
            return INVALID_VALUE;
        }
        for (SimulatedStreams.Stream s : gpu.streams.all()) {
            for (StreamOp op : s.queue) {
                if (op.deviceUses.contains(ptr)) {
                    gpu.violations.add("cuMemUnmap of 0x" + Long.toHexString(ptr) + " while queued work still uses it");
                }
            }
        }
        for (List<StreamOp> ops : gpu.graphs.execs.values()) {
            for (StreamOp op : ops) {
                if (op.deviceUses.contains(ptr)) {
                    gpu.violations.add("cuMemUnmap of 0x" + Long.toHexString(ptr) + " baked into a live graph executable");
                }
            }
        }
        MemorySegment.copy(m.bytes(), 0, m.physical.contents, 0, size);
        r.mappings.remove(ptr);
        m.physical.mapping = null;
        if (m.physical.released) {
            free(m.physical);
        }
        return SUCCESS;
    }

    public int cuMemSetAccess(long ptr, long size, MemorySegment desc, long count) {
        MemorySegment d = desc.reinterpret(CUmemAccessDesc_st.sizeof());
        MemorySegment location = CUmemAccessDesc_st.location(d);
        int flags = CUmemAccessDesc_st.flags(d);
        if (count != 1 || CUmemLocation_st.type(location) != LOCATION_DEVICE
                || CUmemLocation_st.id(location) >= gpu.devices.deviceCount || flags != READ_WRITE) {
            return INVALID_VALUE;
        }
        List<Mapping> covered = covering(ptr, size);
        if (covered == null) {
            return INVALID_VALUE;
        }
        for (Mapping m : covered) {
            m.accessible()[0] = true;
        }
        return SUCCESS;
    }

    // ---- what copies and kernels see ----

    /** The bytes of [address, address + n) when every one is mapped and accessible; else null. */
    MemorySegment resolve(long address, long n) {
        List<Mapping> covered = covering(address, Math.max(n, 1));
        if (covered == null) {
            return null;
        }
        for (Mapping m : covered) {
            if (!m.accessible()[0]) {
                return null;
            }
        }
        Reservation r = covered.get(0).reservation();
        return r.backing.asSlice(address - r.base, n);
    }

    /** The addresses of the mappings [address, address + n) touches (the keys of a stream op's device uses). */
    Set<Long> mappingsUnder(long address, long n) {
        List<Mapping> covered = covering(address, Math.max(n, 1));
        Set<Long> keys = new HashSet<>();
        if (covered != null) {
            for (Mapping m : covered) {
                keys.add(m.address());
            }
        }
        return keys;
    }

    int liveReservations() {
        return reservations.size();
    }

    int livePhysical() {
        return physical.size();
    }

    int liveMappings() {
        int n = 0;
        for (Reservation r : reservations.values()) {
            n += r.mappings.size();
        }
        return n;
    }

    // ---- helpers ----

    /** The mappings that cover [address, address + n) without a gap, in order; null when a byte is unmapped. */
    private List<Mapping> covering(long address, long n) {
        Reservation r = reservationOf(address);
        if (r == null || n < 0 || address + n > r.base + r.size) {
            return null;
        }
        Map.Entry<Long, Mapping> first = r.mappings.floorEntry(address);
        if (first == null) {
            return null;
        }
        List<Mapping> found = new ArrayList<>();
        long at = address;
        Mapping m = first.getValue();
        while (true) {
            if (m == null || m.address() > at || m.address() + m.size() <= at) {
                return null;
            }
            found.add(m);
            at = m.address() + m.size();
            if (at >= address + n) {
                return found;
            }
            m = r.mappings.get(at);
        }
    }

    private Reservation reservationOf(long address) {
        Map.Entry<Long, Reservation> e = reservations.floorEntry(address);
        return e == null || address >= e.getKey() + e.getValue().size ? null : e.getValue();
    }

    private static boolean overlaps(Reservation r, long address, long size) {
        Map.Entry<Long, Mapping> below = r.mappings.floorEntry(address + size - 1);
        return below != null && below.getValue().address() + below.getValue().size() > address;
    }

    /** Whether a mapping starts at {@code address} now (what a use of a mapped range names). */
    boolean mappedAt(long address) {
        Reservation r = reservationOf(address);
        return r != null && r.mappings.containsKey(address);
    }

    private boolean onDevice(MemorySegment prop) {
        MemorySegment p = prop.reinterpret(CUmemAllocationProp_st.sizeof());
        MemorySegment location = CUmemAllocationProp_st.location(p);
        return CUmemAllocationProp_st.type(p) == CudaDriver.CU_MEM_ALLOCATION_TYPE_PINNED()
                && CUmemLocation_st.type(location) == LOCATION_DEVICE && CUmemLocation_st.id(location) >= 0
                && CUmemLocation_st.id(location) < gpu.devices.deviceCount;
    }

    private void free(Physical p) {
        physical.remove(p.handle);
        gpu.memory.deviceBytes -= p.size;
        p.arena.close();
    }

    /** {@code size} bytes of host address space whose pages are made (zeroed) when first touched; null when refused. */
    private static MemorySegment reserveHost(long size) {
        try {
            // PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE: no memory is
            // committed up front, so a reservation the size of a GPU costs nothing until written.
            long address = (long) MMAP.invokeExact(0L, size, 3, 0x02 | 0x20 | 0x4000, -1, 0L);
            return address == -1 ? null : MemorySegment.ofAddress(address).reinterpret(size);
        } catch (Throwable t) {
            throw new AssertionError("mmap cannot be called", t);
        }
    }

    /**
     * Gives a freed reservation's pages back (MADV_DONTNEED) but keeps the host range: an operation
     * queued against it by mistake then reads zeros instead of crashing the JVM (and the unmap
     * that preceded it was recorded as a violation).
     */
    private static void discardHost(MemorySegment backing) {
        try {
            int r = (int) MADVISE.invokeExact(backing.address(), backing.byteSize(), 4);
            if (r != 0) {
                throw new AssertionError("madvise of the simulated reservation failed");
            }
        } catch (Throwable t) {
            throw t instanceof AssertionError a ? a : new AssertionError("madvise cannot be called", t);
        }
    }
}
