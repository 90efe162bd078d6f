package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.ContextCore;
import dev.gatun.cuda.internal.context.Evidence;
import dev.gatun.cuda.internal.context.OwnedResource;
import dev.gatun.cuda.internal.context.Retirement;
import dev.gatun.cuda.internal.context.StreamCore;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A CUDA event: a marker recorded into a stream. Fence events (timing disabled) order and
 * observe work; timing events also measure the GPU time between two records. Recording and
 * querying a warmed event allocate nothing.
 */
public final class Event extends Owner {

    private final CudaContext context;
    private final ContextCore core;
    private final Resource resource;
    private final boolean timing;

    private static final class Resource extends OwnedResource {
        final MemorySegment handle;
        final boolean timing;

        Resource(ContextCore core, MemorySegment handle, boolean timing) {
            super(core, OwnerKind.EVENT);
            this.handle = handle;
            this.timing = timing;
        }

        @Override
        protected Retirement.Release howToFree() {
            // Safety: every stream it was recorded on has passed a later fence, so no record or
            // wait on this event is pending.
            return () -> context.api().cuEventDestroy_v2(handle);
        }

        @Override
        protected boolean synchronizingFree() {
            return true;
        }

        @Override
        public String identity() {
            return (timing ? "TimingEvent#" : "Event#") + id() + " (device " + context.device() + ")";
        }
    }

    Event(CudaContext context, boolean timing) {
        ContextCore core = context.core();
        core.enter("cuEventCreate");
        MemorySegment out = core.scratch();
        int flags = timing ? dev.gatun.cuda.bindings.driver.CudaDriver.CU_EVENT_DEFAULT()
                : dev.gatun.cuda.bindings.driver.CudaDriver.CU_EVENT_DISABLE_TIMING();
        // Safety: scratch holds the CUevent the driver writes.
        core.check(core.api().cuEventCreate(out, flags), "cuEventCreate");
        Resource r = new Resource(core, MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0)), timing);
        super(r);
        this.context = context;
        this.core = core;
        this.timing = timing;
        this.resource = r;
    }

    public CudaContext context() {
        return context;
    }

    public boolean isTiming() {
        return timing;
    }

    /** Records this event after the work queued so far on {@code stream}. */
    public void record(Stream stream) {
        resource.checkOpen();
        StreamCore s = stream.enter("cuEventRecord");
        context.checkSame(stream.context(), "the stream");
        resource.usedOn(s);
        // Safety: open event and open stream of the current context.
        core.check(core.api().cuEventRecord(resource.handle, s.handle()), "cuEventRecord");
    }

    /** Whether the work before the last record has completed (true if never recorded). Does not block. */
    public boolean query() {
        resource.checkOpen();
        core.enter("cuEventQuery");
        // Safety: open event of the current context.
        int r = core.api().cuEventQuery(resource.handle);
        if (r == 0) {
            return true;
        }
        if (r == Evidence.PENDING) {
            return false;
        }
        throw core.fail(r, "cuEventQuery");
    }

    /** Blocks until the work before the last record has completed. */
    public void synchronize() {
        resource.checkOpen();
        core.enter("cuEventSynchronize");
        core.stats().forcedSynchronizations.increment();
        // Safety: open event of the current context.
        core.check(core.api().cuEventSynchronize(resource.handle), "cuEventSynchronize");
    }

    /**
     * GPU milliseconds from {@code start}'s last record to this event's, both timing events of
     * this context whose records have completed (resolution about half a microsecond).
     */
    public float elapsedMillis(Event start) {
        resource.checkOpen();
        start.resource.checkOpen();
        context.checkSame(start.context, "the start event");
        if (!timing || !start.timing) {
            throw new IllegalArgumentException("elapsed time needs two timing events (CudaContext.createTimingEvent)");
        }
        core.enter("cuEventElapsedTime");
        core.driver().require("cuEventElapsedTime_v2", 12080);
        MemorySegment out = core.scratch();
        // Safety: scratch holds the float the driver writes; both events are open.
        core.check(core.api().cuEventElapsedTime_v2(out, start.resource.handle, resource.handle), "cuEventElapsedTime");
        return out.get(ValueLayout.JAVA_FLOAT, 0);
    }

    /** The handle for a wait on {@code stream}; records that the event was used there. */
    MemorySegment handleForUse(StreamCore stream) {
        resource.checkOpen();
        resource.usedOn(stream);
        return resource.handle;
    }

}
