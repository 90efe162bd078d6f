package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.bindings.driver.CUmemAccessDesc_st;
import dev.gatun.cuda.bindings.driver.CUmemAllocationProp_st;
import dev.gatun.cuda.bindings.driver.CUmemLocation_st;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Layer 2, virtual memory management ({@code cuMemAddressReserve}, {@code cuMemCreate},
 * {@code cuMemMap}, ...): the calls behind a growable buffer. A range of device addresses is
 * reserved once; physical chunks are created on the device and mapped into it, then made
 * accessible; shrinking unmaps and releases them; the range is freed last. Each call names its
 * operation once, owns its out-parameters and checks its result; the undoing calls (unmap,
 * release, address free) hand their raw result back, for retirement and rollback; each makes
 * the context current first, as every call here does.
 *
 * <p>Virtual memory management came with CUDA 10.2, older than the oldest driver Gatun runs on
 * (CUDA 12.0), so no call here needs a version check; whether a device supports it is its
 * {@code CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED}, which the owner checks first.
 */
public final class VirtualMemoryCalls {

    private static final String GRANULARITY = "cuMemGetAllocationGranularity";
    private static final String RESERVE = "cuMemAddressReserve";
    private static final String ADDRESS_FREE = "cuMemAddressFree";
    private static final String CREATE = "cuMemCreate";
    private static final String RELEASE = "cuMemRelease";
    private static final String MAP = "cuMemMap";
    private static final String UNMAP = "cuMemUnmap";
    private static final String SET_ACCESS = "cuMemSetAccess";

    private static final int LOCATION_DEVICE = CudaDriver.CU_MEM_LOCATION_TYPE_DEVICE();
    private static final int PINNED = CudaDriver.CU_MEM_ALLOCATION_TYPE_PINNED();
    private static final int NO_EXPORT = CudaDriver.CU_MEM_HANDLE_TYPE_NONE();
    private static final int MINIMUM = CudaDriver.CU_MEM_ALLOC_GRANULARITY_MINIMUM();
    private static final int RECOMMENDED = CudaDriver.CU_MEM_ALLOC_GRANULARITY_RECOMMENDED();
    /** Where an 8-byte result goes in the out block; the structure the driver reads follows it. */
    private static final long RESULT = 0;
    private static final long STRUCT = 8;
    private static final long ACCESS_TYPE = STRUCT + CUmemAccessDesc_st.location$offset() + CUmemLocation_st.type$offset();
    private static final long ACCESS_ID = STRUCT + CUmemAccessDesc_st.location$offset() + CUmemLocation_st.id$offset();
    private static final long ACCESS_FLAGS = STRUCT + CUmemAccessDesc_st.flags$offset();

    static {
        if (STRUCT + Math.max(CUmemAllocationProp_st.sizeof(), CUmemAccessDesc_st.sizeof()) > Checked.OUT_BYTES) {
            throw new AssertionError("the allocation structures do not fit the out block"); // a bindings change would show here
        }
    }

    private final Checked c;

    VirtualMemoryCalls(Checked c) {
        this.c = c;
    }

    /**
     * The granularity of physical allocations on {@code device} ({@code cuMemGetAllocationGranularity}
     * for pinned device memory, not exportable): the minimum, which every size and address of a
     * mapping must be a multiple of, or the recommended one, which performs best.
     */
    public long granularity(int device, boolean recommended) {
        c.current(GRANULARITY);
        MemorySegment out = c.out();
        MemorySegment prop = properties(out, device);
        out.set(ValueLayout.JAVA_LONG, RESULT, 0);
        // Safety: out[0..8) receives the size_t; prop is a zeroed, filled CUmemAllocationProp in the same block.
        c.check(c.api.cuMemGetAllocationGranularity(out, prop, recommended ? RECOMMENDED : MINIMUM), GRANULARITY);
        return out.get(ValueLayout.JAVA_LONG, RESULT);
    }

    /**
     * Reserves {@code bytes} of device address space, aligned to {@code alignment}
     * ({@code cuMemAddressReserve}); nothing is mapped in it yet.
     *
     * @param bytes a multiple of the minimum granularity
     * @param alignment a power of two multiple of the minimum granularity
     */
    public long reserve(long bytes, long alignment) {
        c.current(RESERVE);
        MemorySegment out = c.out();
        out.set(ValueLayout.JAVA_LONG, RESULT, 0);
        // Safety: out holds the CUdeviceptr the driver writes; no fixed address is asked for (0), no flags.
        c.check(c.api.cuMemAddressReserve(out, bytes, alignment, 0, 0), RESERVE);
        return out.get(ValueLayout.JAVA_LONG, RESULT);
    }

    /**
     * Frees a reserved range; the raw result.
     *
     * @param address a range from {@link #reserve} with nothing mapped in it any more
     */
    public int free(long address, long bytes) {
        int current = c.currentForRaw();
        if (current != 0) {
            return current;
        }
        // Safety: the caller's contract: every mapping in the range has been unmapped, so no work can reach it.
        return c.observe(c.api.cuMemAddressFree(address, bytes), ADDRESS_FREE);
    }

    /** {@code bytes} of physical memory on {@code device} ({@code cuMemCreate}); a handle, mapped nowhere yet. */
    public long create(long bytes, int device) {
        c.current(CREATE);
        MemorySegment out = c.out();
        MemorySegment prop = properties(out, device);
        out.set(ValueLayout.JAVA_LONG, RESULT, 0);
        // Safety: out[0..8) receives the CUmemGenericAllocationHandle; prop is a zeroed, filled
        // CUmemAllocationProp in the same block; bytes is a multiple of the granularity; no flags.
        c.check(c.api.cuMemCreate(out, bytes, prop, 0), CREATE);
        return out.get(ValueLayout.JAVA_LONG, RESULT);
    }

    /**
     * Releases a physical allocation's handle; the memory goes back to the device once no mapping
     * of it remains. The raw result.
     */
    public int release(long handle) {
        int current = c.currentForRaw();
        if (current != 0) {
            return current;
        }
        // Safety: the caller's contract: the handle is from create, and is released once.
        return c.observe(c.api.cuMemRelease(handle), RELEASE);
    }

    /** Maps all of {@code handle}'s {@code bytes} at {@code address}, inside a reserved range ({@code cuMemMap}). */
    public void map(long address, long bytes, long handle) {
        c.current(MAP);
        // Safety: [address, address + bytes) lies inside a range this context reserved and is not
        // mapped; the handle is a live physical allocation of exactly bytes; offset 0, no flags.
        c.check(c.api.cuMemMap(address, bytes, 0, handle, 0), MAP);
    }

    /**
     * Unmaps one mapping ({@code cuMemUnmap}); the raw result.
     *
     * @param address the start of a mapping made by {@link #map}, of exactly {@code bytes}
     */
    public int unmap(long address, long bytes) {
        int current = c.currentForRaw();
        if (current != 0) {
            return current;
        }
        // Safety: the caller's contract: all work that may touch the range has completed.
        return c.observe(c.api.cuMemUnmap(address, bytes), UNMAP);
    }

    /**
     * Lets {@code device} read and write the mapped range [address, address + bytes)
     * ({@code cuMemSetAccess}, {@code CU_MEM_ACCESS_FLAGS_PROT_*} in {@code flags}); a mapping is
     * not accessible, even from its own device, until this is done.
     */
    public void setAccess(long address, long bytes, int device, int flags) {
        c.current(SET_ACCESS);
        MemorySegment out = c.out();
        out.set(ValueLayout.JAVA_INT, ACCESS_TYPE, LOCATION_DEVICE);
        out.set(ValueLayout.JAVA_INT, ACCESS_ID, device);
        out.set(ValueLayout.JAVA_INT, ACCESS_FLAGS, flags);
        // Safety: one CUmemAccessDesc at out[STRUCT..); the range is mapped; device is this context's.
        c.check(c.api.cuMemSetAccess(address, bytes, out.asSlice(STRUCT), 1), SET_ACCESS);
    }

    /** Pinned device memory on {@code device}, not exportable, in the out block after the result slot. */
    private static MemorySegment properties(MemorySegment out, int device) {
        MemorySegment prop = out.asSlice(STRUCT, CUmemAllocationProp_st.sizeof()); // a cold path: one slice
        prop.fill((byte) 0); // reserved bytes must be zero, and so must the fields left to their defaults
        CUmemAllocationProp_st.type(prop, PINNED);
        CUmemAllocationProp_st.requestedHandleTypes(prop, NO_EXPORT);
        MemorySegment location = CUmemAllocationProp_st.location(prop);
        CUmemLocation_st.type(location, LOCATION_DEVICE);
        CUmemLocation_st.id(location, device);
        return prop;
    }
}
