package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.Retirement;
import dev.gatun.cuda.internal.context.StreamState;
import java.lang.foreign.MemorySegment;

/**
 * A CUDA event: a marker recorded into a stream. Fence events (timing disabled) order and
 * observe work; timing events also measure the GPU time between two records. Recording and
 * querying a warmed event allocate nothing.
 */
public final class Event extends Owner {

    private final CudaContext context;
    private final ContextState state;
    private final Resource resource;
    private final boolean timing;

    private static final class Resource extends NativeResource {
        final MemorySegment handle;
        final boolean timing;

        Resource(ContextState state, MemorySegment handle, boolean timing) {
            super(state, OwnerKind.EVENT);
            this.handle = handle;
            this.timing = timing;
        }

        @Override
        protected Retirement.Release howToFree() {
            // Every stream it was recorded on has passed a later fence, so no record or wait on
            // this event is pending.
            return () -> context.calls().events().destroy(handle);
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
        ContextState state = context.state();
        Resource r = new Resource(state, state.calls().events().create(timing), timing);
        super(r);
        this.context = context;
        this.state = state;
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
        StreamState s = stream.openState();
        context.checkSame(stream.context(), "the stream");
        resource.usedOn(s);
        state.calls().events().record(resource.handle, s.handle());
    }

    /** Whether the work before the last record has completed (true if never recorded). Does not block. */
    public boolean query() {
        resource.checkOpen();
        return state.calls().events().query(resource.handle);
    }

    /** Blocks until the work before the last record has completed. */
    public void synchronize() {
        resource.checkOpen();
        state.stats().forcedSynchronizations.increment();
        state.calls().events().synchronize(resource.handle);
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
        return state.calls().events().elapsedMillis(start.resource.handle, resource.handle);
    }

    /**
     * For what names this event beyond a single call (a launch attribute, a graph node): checks
     * that it is open and of {@code user}'s context; returns its owner, for a graph to hold.
     *
     * @param what names the event in messages, e.g. "the programmatic event"
     */
    NativeResource checkedOwnerFor(CudaContext user, String what) {
        user.checkSame(context, what);
        resource.checkOpen();
        return resource;
    }

    /** The handle, for a graph node or launch attribute that names it (checked with {@link #checkedOwnerFor}). */
    MemorySegment handle() {
        return resource.handle;
    }

    /** The handle for a wait on {@code stream}; records that the event was used there. */
    MemorySegment handleForUse(StreamState stream) {
        resource.checkOpen();
        resource.usedOn(stream);
        return resource.handle;
    }

}
