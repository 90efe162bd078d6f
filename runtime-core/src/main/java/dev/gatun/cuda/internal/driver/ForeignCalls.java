package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Layer 2, handles made by other libraries: the queries that validate a foreign stream or
 * device pointer before Gatun wraps it, and the context another library's work on a Gatun stream
 * runs in. Each call names its operation once, owns its out-parameters and checks its result.
 * The queries need no current context (each names its handle); {@link #currentForForeignWork}
 * makes one.
 */
public final class ForeignCalls {

    private static final String STREAM_CONTEXT = "cuStreamGetCtx";
    private static final String STREAM_PRIORITY = "cuStreamGetPriority";
    private static final String POINTER = "cuPointerGetAttributes";
    private static final String FOREIGN_WORK = "Stream.submitForeign";
    /** The attributes {@link #pointer} asks for, in the order of the {@link Pointer} components. */
    private static final int[] POINTER_ATTRIBUTES = {CudaDriver.CU_POINTER_ATTRIBUTE_CONTEXT(),
            CudaDriver.CU_POINTER_ATTRIBUTE_MEMORY_TYPE(), CudaDriver.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL(),
            CudaDriver.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR(), CudaDriver.CU_POINTER_ATTRIBUTE_RANGE_SIZE()};
    /** Out block layout for {@link #pointer}: the attribute ids, then one data pointer per attribute, then one 8-byte slot each. */
    private static final long IDS = 0;
    private static final long DATA = 24;
    private static final long VALUES = DATA + 8L * POINTER_ATTRIBUTES.length;

    static {
        if (VALUES + 8L * POINTER_ATTRIBUTES.length > Checked.OUT_BYTES || 4L * POINTER_ATTRIBUTES.length > DATA) {
            throw new ExceptionInInitializerError("the pointer attribute query does not fit the out block");
        }
    }

    private final Checked c;

    ForeignCalls(Checked c) {
        this.c = c;
    }

    /**
     * What the driver knows of a device address.
     *
     * @param context the {@code CUcontext} it was allocated in (0 when the driver does not know
     *     the pointer, and for memory-pool and virtual-memory allocations, which belong to a
     *     device rather than a context)
     * @param memoryType a {@code CU_MEMORYTYPE_*} (0 when the driver does not know the pointer)
     * @param deviceOrdinal the device it lives on
     * @param rangeStart the start of the allocation holding it
     * @param rangeSize that allocation's size in bytes
     */
    public record Pointer(long context, int memoryType, int deviceOrdinal, long rangeStart, long rangeSize) {
    }

    /** The context {@code stream} belongs to ({@code CUcontext} address). */
    public long streamContext(MemorySegment stream) {
        c.live(STREAM_CONTEXT);
        MemorySegment out = c.out();
        // Safety: out holds the one CUcontext the driver writes; the driver checks the stream
        // handle (the caller refused NULL and the legacy and per-thread pseudo-handles).
        c.check(c.api.cuStreamGetCtx(stream, out), STREAM_CONTEXT);
        return out.get(ValueLayout.JAVA_LONG, 0);
    }

    /** {@code stream}'s priority: lower numbers mean higher priority. */
    public int streamPriority(MemorySegment stream) {
        c.live(STREAM_PRIORITY);
        MemorySegment out = c.out();
        // Safety: out holds the one int the driver writes; the stream was validated by streamContext.
        c.check(c.api.cuStreamGetPriority(stream, out), STREAM_PRIORITY);
        return out.get(ValueLayout.JAVA_INT, 0);
    }

    /**
     * The driver's attributes of {@code address}. Unlike its single-attribute sibling, the call
     * succeeds for an address the driver does not know, reporting zeros.
     */
    public Pointer pointer(long address) {
        c.live(POINTER);
        MemorySegment out = c.out();
        out.fill((byte) 0);
        for (int i = 0; i < POINTER_ATTRIBUTES.length; i++) {
            out.set(ValueLayout.JAVA_INT, IDS + 4L * i, POINTER_ATTRIBUTES[i]);
            out.set(ValueLayout.ADDRESS, DATA + 8L * i, out.asSlice(VALUES + 8L * i, 8));
        }
        // Safety: out holds the attribute ids, one data pointer per id, and the 8-byte slots they
        // point to (each attribute's value is at most 8 bytes), all inside this thread's out block;
        // the driver only reads the address, it never dereferences it.
        c.check(c.api.cuPointerGetAttributes(POINTER_ATTRIBUTES.length, out.asSlice(IDS, DATA),
                out.asSlice(DATA, VALUES - DATA), address), POINTER);
        return new Pointer(out.get(ValueLayout.JAVA_LONG, VALUES), out.get(ValueLayout.JAVA_INT, VALUES + 8),
                out.get(ValueLayout.JAVA_INT, VALUES + 16), out.get(ValueLayout.JAVA_LONG, VALUES + 24),
                out.get(ValueLayout.JAVA_LONG, VALUES + 32));
    }

    /**
     * Before another library queues work on one of this context's streams ({@code Stream.submitForeign}):
     * fails fast when the context is poisoned or the thread runs a host callback, then makes the
     * context current (one {@code cuCtxGetCurrent} when it already is). Libraries over the runtime
     * API (cuBLAS, cuDNN) launch into the thread's current context, not the stream's: without it a
     * launch on this context's stream would fail, or run in another device's primary context. The
     * caller makes its library calls right after, with nothing between that can park (see
     * {@link Checked#current}).
     */
    public void currentForForeignWork() {
        c.current(FOREIGN_WORK);
    }
}
