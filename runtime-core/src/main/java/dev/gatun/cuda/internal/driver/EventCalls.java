package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** Layer 2, events: each call names its operation once, owns its out-parameters and checks its result. */
public final class EventCalls {

    private static final String CREATE = "cuEventCreate";
    private static final String DESTROY = "cuEventDestroy";
    private static final String RECORD = "cuEventRecord";
    private static final String QUERY = "cuEventQuery";
    private static final String SYNCHRONIZE = "cuEventSynchronize";
    private static final String ELAPSED = "cuEventElapsedTime";
    private static final int TIMING = CudaDriver.CU_EVENT_DEFAULT();
    private static final int FENCE = CudaDriver.CU_EVENT_DISABLE_TIMING();
    private static final int INTERPROCESS = CudaDriver.CU_EVENT_INTERPROCESS() | FENCE; // the driver requires timing off

    private final Checked c;

    EventCalls(Checked c) {
        this.c = c;
    }

    /** A new event of this context: a timing event, or a fence (timing disabled, the cheapest kind). */
    public MemorySegment create(boolean timing) {
        return create(timing ? TIMING : FENCE);
    }

    /** A new fence event of this context that other processes can open ({@code CU_EVENT_INTERPROCESS}). */
    public MemorySegment createInterprocess() {
        return create(INTERPROCESS);
    }

    private MemorySegment create(int flags) {
        c.current(CREATE);
        MemorySegment out = c.out();
        // Safety: out holds the CUevent the driver writes; the context is current.
        c.check(c.api.cuEventCreate(out, flags), CREATE);
        return MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
    }

    /**
     * Destroys an event; the raw result, for retirement (sticky results still poison).
     *
     * @param event an event of this context that no one will record, query or wait on again
     */
    public int destroy(MemorySegment event) {
        int current = c.currentForRaw();
        if (current != 0) {
            return current;
        }
        // Safety: the caller's contract: the event is live and unused from now on; its context is
        // current on this carrier, made so just now.
        return c.observe(c.api.cuEventDestroy_v2(event), DESTROY);
    }

    /** Records the event after the work queued so far on {@code stream} (both of this context). */
    public void record(MemorySegment event, MemorySegment stream) {
        c.live(RECORD);
        // Safety: the caller passes a live event and a live, non-capturing stream of this context.
        c.check(c.api.cuEventRecord(event, stream), RECORD);
    }

    /** Records without throwing: 0 or the driver's error, for fences that retry later. */
    public int tryRecord(MemorySegment event, MemorySegment stream) {
        if (c.poisoned()) {
            return CuResults.CONTEXT_IS_DESTROYED;
        }
        int refused = c.refusedInsideCallback();
        if (refused != 0) {
            return refused;
        }
        // Safety: as in record.
        return c.observe(c.api.cuEventRecord(event, stream), RECORD);
    }

    /** Whether the work before the event's last record has completed (true if never recorded). */
    public boolean query(MemorySegment event) {
        c.live(QUERY);
        // Safety: the caller passes a live event of this context.
        int r = c.api.cuEventQuery(event);
        if (r == 0) {
            return true;
        }
        if (r == CuResults.NOT_READY) {
            return false;
        }
        throw c.fail(r, QUERY);
    }

    /** The raw query result (0, {@link CuResults#NOT_READY}, or an error), for completion evidence. */
    public int poll(MemorySegment event) {
        int refused = c.refusedInsideCallback();
        if (refused != 0) {
            return refused;
        }
        // Safety: the caller passes a live event of this context.
        return c.observe(c.api.cuEventQuery(event), QUERY);
    }

    /** Blocks until the work before the event's last record has completed. */
    public void synchronize(MemorySegment event) {
        c.live(SYNCHRONIZE);
        // Safety: the caller passes a live event of this context.
        c.check(c.api.cuEventSynchronize(event), SYNCHRONIZE);
    }

    /** {@link #synchronize} with the raw result, for a pinned buffer's transfer state machine (sticky results still poison). */
    public int trySynchronize(MemorySegment event) {
        int refused = c.refusedInsideCallback();
        if (refused != 0) {
            return refused;
        }
        // Safety: the caller passes a live event of this context.
        return c.observe(c.api.cuEventSynchronize(event), SYNCHRONIZE);
    }

    /**
     * GPU milliseconds between two completed records of timing events: {@code cuEventElapsedTime_v2}
     * where the driver has it (CUDA 12.8), else {@code cuEventElapsedTime}, the same measure (the
     * second need not report the errors of other pending work, which Gatun's own calls report).
     */
    public float elapsedMillis(MemorySegment start, MemorySegment end) {
        c.live(ELAPSED);
        boolean second = c.driver().supports(DriverFeature.ELAPSED_TIME_V2);
        MemorySegment out = c.out();
        // Safety: out holds the float the driver writes; both events are live timing events.
        c.check(second ? c.api.cuEventElapsedTime_v2(out, start, end) : c.api.cuEventElapsedTime(out, start, end),
                ELAPSED);
        return out.get(ValueLayout.JAVA_FLOAT, 0);
    }
}
