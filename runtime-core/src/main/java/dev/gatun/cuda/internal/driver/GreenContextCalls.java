package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.bindings.driver.CUdevResource_st;
import dev.gatun.cuda.bindings.driver.CUdevSmResource_st;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.ValueLayout;

/**
 * Layer 2, green contexts: a device's SMs as a resource, split into groups, each group made a
 * green context, the {@code CUcontext} of a green context, and its destruction. These calls
 * belong to no context (a green context is made from the device, not from a current context), so
 * errors name the device and poison nothing; each call names its operation once, owns its
 * out-parameters and checks its result.
 *
 * <p>Resources ({@code CUdevResource}) are plain structs the caller allocates
 * ({@link #resources}); the driver writes them and reads them back in later calls.
 */
public final class GreenContextCalls {

    private static final String GET_RESOURCE = "cuDeviceGetDevResource";
    private static final String SPLIT = "cuDevSmResourceSplitByCount";
    private static final String DESCRIBE = "cuDevResourceGenerateDesc";
    private static final String CREATE = "cuGreenCtxCreate";
    private static final String TO_CONTEXT = "cuCtxFromGreenCtx";
    private static final String DESTROY = "cuGreenCtxDestroy";
    private static final long RESOURCE_BYTES = CUdevResource_st.sizeof();
    private static final long SM_COUNT_OFFSET = CUdevResource_st.sm$offset() + CUdevSmResource_st.smCount$offset();

    private final Checked c;

    private GreenContextCalls(Checked c) {
        this.c = c;
    }

    /** The calls for one device. */
    public static GreenContextCalls of(Driver driver, int device) {
        return new GreenContextCalls(Checked.withoutContext(driver, device));
    }

    /** {@code count} zeroed {@code CUdevResource} structs, for the calls below to write. */
    public static MemorySegment resources(SegmentAllocator allocator, int count) {
        return allocator.allocate(CUdevResource_st.layout(), count);
    }

    /** The {@code index}th struct of {@code resources}. */
    public static MemorySegment resource(MemorySegment resources, int index) {
        return resources.asSlice(index * RESOURCE_BYTES, RESOURCE_BYTES);
    }

    /** {@return how many SMs a resource the driver wrote holds} */
    public static int smCount(MemorySegment resource) {
        return resource.get(ValueLayout.JAVA_INT, SM_COUNT_OFFSET);
    }

    /**
     * Writes every SM of the device into {@code into} (one {@code CUdevResource}).
     *
     * @param device the {@code CUdevice}
     */
    public void smResource(int device, MemorySegment into) {
        c.require(DriverFeature.GREEN_CONTEXTS);
        // Safety: into is one whole CUdevResource struct that outlives the call.
        c.check(c.api.cuDeviceGetDevResource(device, into, CudaDriver.CU_DEV_RESOURCE_TYPE_SM()), GET_RESOURCE);
    }

    /**
     * Splits {@code input} into at most {@code groups} groups of at least {@code minCount} SMs each,
     * the rest into {@code remaining}.
     *
     * @param result room for {@code groups} structs
     * @return how many groups the driver made (fewer than asked when the SMs do not suffice)
     */
    public int split(MemorySegment result, int groups, MemorySegment input, MemorySegment remaining, int minCount) {
        MemorySegment out = c.out();
        out.set(ValueLayout.JAVA_INT, 0, groups);
        // Safety: result holds groups structs, the count the driver reads from out and writes back
        // no larger; input is a resource the driver wrote; remaining is one struct.
        c.check(c.api.cuDevSmResourceSplitByCount(result, out, input, remaining, 0, minCount),
                SPLIT + "(" + groups + " groups of " + minCount + " SMs)");
        return out.get(ValueLayout.JAVA_INT, 0);
    }

    /** A descriptor ({@code CUdevResourceDesc}) of one resource the driver wrote, for {@link #create}. */
    public MemorySegment describe(MemorySegment resource) {
        MemorySegment out = c.out();
        // Safety: resource is one struct the driver wrote; out receives the descriptor handle.
        c.check(c.api.cuDevResourceGenerateDesc(out, resource, 1), DESCRIBE);
        return MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
    }

    /**
     * A new green context over the resources of {@code desc}, with its default stream (the flag
     * the driver requires); it retains the device's primary context until destroyed.
     */
    public MemorySegment create(MemorySegment desc, int device) {
        MemorySegment out = c.out();
        // Safety: desc is a descriptor the driver generated; out receives the CUgreenCtx.
        c.check(c.api.cuGreenCtxCreate(out, desc, device, CudaDriver.CU_GREEN_CTX_DEFAULT_STREAM()), CREATE);
        return MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
    }

    /** The {@code CUcontext} of a green context, usable wherever a context is (made current, synchronized). */
    public MemorySegment context(MemorySegment green) {
        MemorySegment out = c.out();
        // Safety: green is a live green context; out receives the CUcontext.
        c.check(c.api.cuCtxFromGreenCtx(out, green), TO_CONTEXT);
        return MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
    }

    /**
     * Destroys a green context; the raw result.
     *
     * @param green a green context whose every stream, event and allocation is gone (its Gatun
     *     context closed and drained)
     */
    public int destroy(MemorySegment green) {
        // Safety: the caller's contract: nothing of the green context is used again.
        return c.observe(c.api.cuGreenCtxDestroy(green), DESTROY);
    }

    /** The typed exception for a raw result {@link #destroy} returned. */
    public RuntimeException failure(int result) {
        return c.fail(result, DESTROY);
    }
}
