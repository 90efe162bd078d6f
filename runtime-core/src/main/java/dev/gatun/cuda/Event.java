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
 *
 * <p>An {@linkplain CudaContext#createInterprocessEvent interprocess event} is a fence that
 * another process can open ({@link #exportForIpc()}, then {@link CudaContext#importEvent}
 * there) to wait for work this process queued. The imported event is an event of the importing
 * process (its own handle, destroyed there when closed), recorded and waited on like any other.
 */
public final class Event extends Owner {

    private final CudaContext context;
    private final ContextState state;
    private final Resource resource;
    private final boolean timing;

    /** How the event came to be: what it can do and what its identity says. */
    private enum Origin {
        FENCE("Event#"), TIMING("TimingEvent#"), INTERPROCESS("InterprocessEvent#"), IMPORTED("ImportedEvent#");

        final String prefix;

        Origin(String prefix) {
            this.prefix = prefix;
        }
    }

    private static final class Resource extends NativeResource {
        final MemorySegment handle;
        final Origin origin;

        Resource(ContextState state, MemorySegment handle, Origin origin) {
            super(state, OwnerKind.EVENT);
            this.handle = handle;
            this.origin = origin;
        }

        @Override
        protected Retirement.Release howToFree() {
            // Every stream it was recorded on has passed a later fence, so no record or wait on
            // this event is pending. An imported event is this process's own handle, destroyed
            // the same way (the exporter's event is the exporter's).
            return () -> context.calls().events().destroy(handle);
        }

        @Override
        protected boolean synchronizingFree() {
            return true;
        }

        @Override
        public String identity() {
            return origin.prefix + id() + " (device " + context.device() + ")";
        }
    }

    Event(CudaContext context, boolean timing) {
        this(context, timing ? Origin.TIMING : Origin.FENCE, context.state().calls().events().create(timing));
    }

    private Event(CudaContext context, Origin origin, MemorySegment handle) {
        ContextState state = context.state();
        Resource r = new Resource(state, handle, origin);
        super(r);
        this.context = context;
        this.state = state;
        this.timing = origin == Origin.TIMING;
        this.resource = r;
    }

    /** A new interprocess fence ({@code CU_EVENT_INTERPROCESS}, timing disabled). */
    static Event interprocess(CudaContext context) {
        return new Event(context, Origin.INTERPROCESS, context.state().calls().events().createInterprocess());
    }

    /** Opens the event {@code handle} names, exported by another process ({@code cuIpcOpenEventHandle}). */
    static Event importFrom(CudaContext context, IpcEventHandle handle) {
        return new Event(context, Origin.IMPORTED, context.state().calls().ipc().openEvent(handle.driverHandle()));
    }

    public CudaContext context() {
        return context;
    }

    public boolean isTiming() {
        return timing;
    }

    /** Whether this event was opened from another process's handle ({@link CudaContext#importEvent}). */
    public boolean isImported() {
        return resource.origin == Origin.IMPORTED;
    }

    /**
     * Exports this interprocess event for another process ({@code cuIpcGetEventHandle}), which
     * opens it with {@link CudaContext#importEvent}. Record it after the work the other process
     * must wait for; the importer waits on its last record. Keep this event open until every
     * importer has closed its import (the driver leaves operations on an imported event whose
     * exporter destroyed it undefined).
     *
     * @throws IllegalStateException when the event is closed, was not made with
     *     {@link CudaContext#createInterprocessEvent()}, or was itself imported
     */
    public IpcEventHandle exportForIpc() {
        resource.checkOpen();
        if (resource.origin != Origin.INTERPROCESS) {
            throw new IllegalStateException(resource.identity() + (resource.origin == Origin.IMPORTED
                    ? " was imported from another process: export it from the process that created it"
                    : " cannot be shared with other processes; create it with CudaContext.createInterprocessEvent()"));
        }
        return new IpcEventHandle(state.calls().ipc().eventHandle(resource.handle));
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
