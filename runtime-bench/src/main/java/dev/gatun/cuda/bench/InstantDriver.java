package dev.gatun.cuda.bench;

import dev.gatun.cuda.internal.driver.DriverApi;
import dev.gatun.cuda.internal.driver.ForwardingDriverApi;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A driver whose calls of the host-overhead rows return at once, so that what an operation costs
 * on it is the Java work around those calls and nothing of a GPU's (issue 36: what each of the
 * nanoseconds Gatun adds over bare FFM pays for). Every other call (the context, stream, event and
 * pool set-up, synchronizes, teardown) goes to the simulated driver behind it, which keeps that
 * state consistent.
 *
 * <p>Answered here, each in a few instructions and without allocating: {@code cuEventRecord} and
 * {@code cuEventQuery} (success: the event is complete), {@code cuMemAllocAsync},
 * {@code cuMemAllocFromPoolAsync} and {@code cuMemAlloc_v2} (a fresh address, never handed out
 * before, 1 MiB-aligned), {@code cuMemFreeAsync} and {@code cuMemFree_v2} (success; the simulated
 * driver never saw the address), {@code cuCtxGetCurrent} and {@code cuCtxSetCurrent} (the context
 * set last, as the simulated driver also records it), each counted ({@link #answered()}, so that a
 * test can tell that an operation made the calls it should and no other). One thread at a time:
 * the benchmarks that use it run on one.
 */
final class InstantDriver extends ForwardingDriverApi {

    /** Where the addresses it hands out begin: far above any the simulated driver uses. */
    private static final long FIRST_ADDRESS = 0x7000_0000_0000L;
    private static final long ALIGNMENT = 1L << 20;

    private long nextAddress = FIRST_ADDRESS;
    /** Calls answered here, not passed on (a plain count: one thread at a time). */
    private long answered;
    /** The context the last cuCtxSetCurrent made current (null until the first). */
    private MemorySegment current = MemorySegment.NULL;

    InstantDriver(DriverApi simulated) {
        super(simulated);
    }

    @Override
    public int cuEventRecord(MemorySegment hEvent, MemorySegment hStream) {
        return answer();
    }

    @Override
    public int cuEventQuery(MemorySegment hEvent) {
        return answer();
    }

    @Override
    public int cuMemAllocAsync(MemorySegment dptr, long bytesize, MemorySegment hStream) {
        return hand(dptr, bytesize);
    }

    @Override
    public int cuMemAllocFromPoolAsync(MemorySegment dptr, long bytesize, MemorySegment pool, MemorySegment hStream) {
        return hand(dptr, bytesize);
    }

    @Override
    public int cuMemAlloc_v2(MemorySegment dptr, long bytesize) {
        return hand(dptr, bytesize);
    }

    @Override
    public int cuMemFreeAsync(long dptr, MemorySegment hStream) {
        return answer();
    }

    @Override
    public int cuMemFree_v2(long dptr) {
        return answer();
    }

    @Override
    public int cuCtxSetCurrent(MemorySegment ctx) {
        int r = next.cuCtxSetCurrent(ctx);
        if (r == 0) {
            current = ctx;
        }
        return r;
    }

    @Override
    public int cuCtxGetCurrent(MemorySegment pctx) {
        answered++;
        pctx.set(ValueLayout.JAVA_LONG, 0, current.address());
        return 0;
    }

    /** How many calls were answered here so far (not passed to the driver behind). */
    long answered() {
        return answered;
    }

    /** A call answered here with success. */
    private int answer() {
        answered++;
        return 0;
    }

    /** Writes the next address into {@code out}: 0 when the simulated driver would. */
    private int hand(MemorySegment out, long bytes) {
        answered++;
        long address = nextAddress;
        nextAddress += (bytes + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
        out.set(ValueLayout.JAVA_LONG, 0, address);
        return 0;
    }
}
