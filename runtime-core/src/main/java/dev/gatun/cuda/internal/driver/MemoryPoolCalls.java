package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.bindings.driver.CUmemAccessDesc_st;
import dev.gatun.cuda.bindings.driver.CUmemLocation_st;
import dev.gatun.cuda.bindings.driver.CUmemPoolProps_st;
import dev.gatun.cuda.bindings.driver.CUmemPoolPtrExportData_st;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Layer 2, memory pools ({@code cuMemPool*}): the device's default pool, creating and
 * destroying pools, their attributes, trimming, peer access, and stream-ordered allocation from
 * a chosen pool. Each call names its operation once, owns its out-parameters and checks its
 * result. A pool allocation is freed with {@link MemoryCalls#freeAsync} like any stream-ordered
 * one.
 *
 * <p>Memory pools came with CUDA 11.2, older than the oldest driver Gatun runs on (CUDA 12.0,
 * checked when the driver is loaded), so no call here needs a version check of its own.
 */
public final class MemoryPoolCalls {

    private static final String DEFAULT_POOL = "cuDeviceGetDefaultMemPool";
    private static final String CREATE = "cuMemPoolCreate";
    private static final String DESTROY = "cuMemPoolDestroy";
    private static final String SET_ATTRIBUTE = "cuMemPoolSetAttribute";
    private static final String GET_ATTRIBUTE = "cuMemPoolGetAttribute";
    private static final String TRIM = "cuMemPoolTrimTo";
    private static final String SET_ACCESS = "cuMemPoolSetAccess";
    private static final String GET_ACCESS = "cuMemPoolGetAccess";
    private static final String ALLOC = "cuMemAllocFromPoolAsync";
    private static final String EXPORT = "cuMemPoolExportToShareableHandle";
    private static final String IMPORT = "cuMemPoolImportFromShareableHandle";
    private static final String EXPORT_POINTER = "cuMemPoolExportPointer";
    private static final String IMPORT_POINTER = "cuMemPoolImportPointer";
    private static final int POSIX_FD = CudaDriver.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR();
    /** {@code sizeof(CUmemPoolPtrExportData)}. */
    public static final int POINTER_EXPORT_BYTES = 64;

    private static final int LOCATION_DEVICE = CudaDriver.CU_MEM_LOCATION_TYPE_DEVICE();
    private static final int PINNED = CudaDriver.CU_MEM_ALLOCATION_TYPE_PINNED();
    /** Where the pool handle goes in the out block; the structure the driver reads follows it. */
    private static final long HANDLE = 0;
    private static final long STRUCT = 8;
    private static final long ACCESS_TYPE = STRUCT + CUmemAccessDesc_st.location$offset() + CUmemLocation_st.type$offset();
    private static final long ACCESS_ID = STRUCT + CUmemAccessDesc_st.location$offset() + CUmemLocation_st.id$offset();
    private static final long ACCESS_FLAGS = STRUCT + CUmemAccessDesc_st.flags$offset();

    static {
        if (STRUCT + Math.max(CUmemPoolProps_st.sizeof(), CUmemAccessDesc_st.sizeof()) > Checked.OUT_BYTES
                || CUmemPoolPtrExportData_st.sizeof() != POINTER_EXPORT_BYTES || STRUCT + POINTER_EXPORT_BYTES > Checked.OUT_BYTES) {
            throw new AssertionError("the pool structures do not fit the out block"); // a bindings change would show here
        }
    }

    private final Checked c;

    MemoryPoolCalls(Checked c) {
        this.c = c;
    }

    /** The device's default pool ({@code cuDeviceGetDefaultMemPool}); it lives as long as the process. */
    public MemorySegment defaultPool(int device) {
        c.current(DEFAULT_POOL);
        MemorySegment out = c.out();
        // Safety: out holds the CUmemoryPool the driver writes; device is this context's ordinal.
        c.check(c.api.cuDeviceGetDefaultMemPool(out, device), DEFAULT_POOL);
        return MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, HANDLE));
    }

    /**
     * A new pool of pinned device memory on {@code device}, exportable through the
     * {@code CUmemAllocationHandleType} {@code handleTypes} ({@code CU_MEM_HANDLE_TYPE_NONE}: not
     * at all), of at most {@code maxSize} reserved bytes ({@code cuMemPoolCreate}).
     *
     * @param maxSize {@code CUmemPoolProps.maxSize}: 0 for the driver's default; any other value
     *     only on a driver for CUDA 12.2 or newer (older ones require the field's bytes to be zero)
     */
    public MemorySegment create(int device, int handleTypes, long maxSize) {
        c.current(CREATE);
        MemorySegment out = c.out();
        MemorySegment props = out.asSlice(STRUCT, CUmemPoolProps_st.sizeof()); // a cold path: one slice
        props.fill((byte) 0); // reserved bytes must be zero, and so must the fields left to their defaults
        CUmemPoolProps_st.allocType(props, PINNED);
        CUmemPoolProps_st.handleTypes(props, handleTypes);
        CUmemPoolProps_st.maxSize(props, maxSize);
        MemorySegment location = CUmemPoolProps_st.location(props);
        CUmemLocation_st.type(location, LOCATION_DEVICE);
        CUmemLocation_st.id(location, device);
        // Safety: out[0..8) receives the CUmemoryPool; props is a zeroed, filled CUmemPoolProps in the same block.
        c.check(c.api.cuMemPoolCreate(out, props), CREATE);
        return MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, HANDLE));
    }

    /**
     * Destroys a pool; the raw result, for retirement (sticky results still poison). Makes the
     * context current first.
     *
     * @param pool a pool from {@link #create} whose every allocation Gatun has freed (stream-ordered frees may still be queued: the driver releases the pool after them)
     */
    public int destroy(MemorySegment pool) {
        int current = c.currentForRaw();
        if (current != 0) {
            return current;
        }
        // Safety: the caller's contract: nothing will allocate from the pool again; the context is
        // current on this carrier, made so just now.
        return c.observe(c.api.cuMemPoolDestroy(pool), DESTROY);
    }

    /** A 64-bit attribute ({@code CU_MEMPOOL_ATTR_RELEASE_THRESHOLD}, the reserved and used counters). */
    public long attribute64(MemorySegment pool, int attribute) {
        c.current(GET_ATTRIBUTE);
        MemorySegment out = c.out();
        out.set(ValueLayout.JAVA_LONG, 0, 0); // the driver writes a cuuint64_t
        // Safety: out holds the 8 bytes the driver writes; pool is a live pool.
        c.check(c.api.cuMemPoolGetAttribute(pool, attribute, out), GET_ATTRIBUTE);
        return out.get(ValueLayout.JAVA_LONG, 0);
    }

    /** Sets a 64-bit attribute (the release threshold; 0 resets a high-water counter). */
    public void setAttribute64(MemorySegment pool, int attribute, long value) {
        c.current(SET_ATTRIBUTE);
        MemorySegment in = c.out();
        in.set(ValueLayout.JAVA_LONG, 0, value);
        // Safety: in holds the cuuint64_t the driver reads; pool is a live pool.
        c.check(c.api.cuMemPoolSetAttribute(pool, attribute, in), SET_ATTRIBUTE);
    }

    /** A boolean attribute (the {@code CU_MEMPOOL_ATTR_REUSE_*} policies, ints in C). */
    public boolean flag(MemorySegment pool, int attribute) {
        c.current(GET_ATTRIBUTE);
        MemorySegment out = c.out();
        out.set(ValueLayout.JAVA_INT, 0, 0);
        // Safety: out holds the int the driver writes; pool is a live pool.
        c.check(c.api.cuMemPoolGetAttribute(pool, attribute, out), GET_ATTRIBUTE);
        return out.get(ValueLayout.JAVA_INT, 0) != 0;
    }

    /** Sets a boolean attribute (a {@code CU_MEMPOOL_ATTR_REUSE_*} policy). */
    public void setFlag(MemorySegment pool, int attribute, boolean on) {
        c.current(SET_ATTRIBUTE);
        MemorySegment in = c.out();
        in.set(ValueLayout.JAVA_INT, 0, on ? 1 : 0);
        // Safety: in holds the int the driver reads; pool is a live pool.
        c.check(c.api.cuMemPoolSetAttribute(pool, attribute, in), SET_ATTRIBUTE);
    }

    /** Releases reserved memory the pool does not use, keeping at least {@code keepBytes} reserved. */
    public void trimTo(MemorySegment pool, long keepBytes) {
        c.current(TRIM);
        // Safety: pool is a live pool; memory in use (or awaiting a queued free) is never released.
        c.check(c.api.cuMemPoolTrimTo(pool, keepBytes), TRIM);
    }

    /**
     * Sets how {@code device} may access the pool's memory ({@code CU_MEM_ACCESS_FLAGS_PROT_*}),
     * for its allocations now and later.
     */
    public void setAccess(MemorySegment pool, int device, int flags) {
        c.current(SET_ACCESS);
        MemorySegment out = c.out();
        out.set(ValueLayout.JAVA_INT, ACCESS_TYPE, LOCATION_DEVICE);
        out.set(ValueLayout.JAVA_INT, ACCESS_ID, device);
        out.set(ValueLayout.JAVA_INT, ACCESS_FLAGS, flags);
        // Safety: one CUmemAccessDesc at out[STRUCT..); device is an ordinal the caller checked.
        c.check(c.api.cuMemPoolSetAccess(pool, out.asSlice(STRUCT), 1), SET_ACCESS);
    }

    /** How {@code device} may access the pool's memory ({@code CU_MEM_ACCESS_FLAGS_PROT_*}). */
    public int access(MemorySegment pool, int device) {
        c.current(GET_ACCESS);
        MemorySegment out = c.out();
        MemorySegment location = out.asSlice(STRUCT, CUmemLocation_st.sizeof()); // a cold path: one slice
        CUmemLocation_st.type(location, LOCATION_DEVICE);
        CUmemLocation_st.id(location, device);
        out.set(ValueLayout.JAVA_INT, 0, 0);
        // Safety: out[0..4) receives the flags; location is a CUmemLocation in the same block.
        c.check(c.api.cuMemPoolGetAccess(out, pool, location), GET_ACCESS);
        return out.get(ValueLayout.JAVA_INT, 0);
    }

    /**
     * A new POSIX file descriptor for {@code pool} ({@code cuMemPoolExportToShareableHandle}), a
     * pool created exportable through one; the caller owns it.
     */
    public int exportFileDescriptor(MemorySegment pool) {
        c.current(EXPORT);
        MemorySegment out = c.out();
        out.set(ValueLayout.JAVA_INT, 0, -1);
        // Safety: out[0..4) receives the int descriptor; pool is a live pool created with the
        // POSIX descriptor handle type.
        c.check(c.api.cuMemPoolExportToShareableHandle(out, pool, POSIX_FD, 0), EXPORT);
        return out.get(ValueLayout.JAVA_INT, 0);
    }

    /**
     * The pool another process exported as {@code fd} ({@code cuMemPoolImportFromShareableHandle}):
     * a pool of this process that cannot allocate, only import allocations. The driver does not
     * keep {@code fd}.
     */
    public MemorySegment importFileDescriptor(int fd) {
        c.current(IMPORT);
        MemorySegment out = c.out();
        // Safety: out[0..8) receives the CUmemoryPool; for a POSIX descriptor the driver reads the
        // handle argument as the descriptor's value, not as an address (an unknown descriptor is
        // an error result).
        c.check(c.api.cuMemPoolImportFromShareableHandle(out, MemorySegment.ofAddress(fd), POSIX_FD, 0), IMPORT);
        return MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, HANDLE));
    }

    /** The 64-byte export data of a pool allocation ({@code cuMemPoolExportPointer}). */
    public byte[] exportPointer(long address) {
        c.current(EXPORT_POINTER);
        MemorySegment out = c.out();
        MemorySegment data = out.asSlice(STRUCT, POINTER_EXPORT_BYTES);
        // Safety: data receives the CUmemPoolPtrExportData; address is a live allocation from an
        // exportable pool of this context.
        c.check(c.api.cuMemPoolExportPointer(data, address), EXPORT_POINTER);
        return data.toArray(ValueLayout.JAVA_BYTE);
    }

    /** Maps another process's pool allocation from the imported {@code pool} ({@code cuMemPoolImportPointer}). */
    public long importPointer(MemorySegment pool, byte[] exportData) {
        c.current(IMPORT_POINTER);
        MemorySegment out = c.out();
        MemorySegment.copy(exportData, 0, out, ValueLayout.JAVA_BYTE, STRUCT, POINTER_EXPORT_BYTES);
        // Safety: out[0..8) receives the CUdeviceptr; out[STRUCT..) holds the export data the
        // driver reads; pool is a live imported pool.
        c.check(c.api.cuMemPoolImportPointer(out, pool, out.asSlice(STRUCT, POINTER_EXPORT_BYTES)), IMPORT_POINTER);
        return out.get(ValueLayout.JAVA_LONG, HANDLE);
    }

    /**
     * {@code bytes} (more than 0) from {@code pool}, in {@code stream}'s order
     * ({@code cuMemAllocFromPoolAsync}). A hot path: one driver call, nothing allocated.
     */
    public long allocate(long bytes, MemorySegment pool, MemorySegment stream, OutBlock streamOut) {
        c.live(ALLOC);
        MemorySegment out = streamOut.view;
        // Safety: out holds the CUdeviceptr the driver writes, and no other call uses it meanwhile
        // (the stream's block, under the stream's lock); the caller passes a live pool and an
        // open stream, both of this context.
        c.check(c.api.cuMemAllocFromPoolAsync(out, bytes, pool, stream), ALLOC);
        return out.get(ValueLayout.JAVA_LONG, 0);
    }
}
