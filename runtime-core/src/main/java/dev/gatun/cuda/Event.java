package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.CaptureScope;
import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.Retirement;
import dev.gatun.cuda.internal.context.StreamState;
import java.lang.foreign.MemorySegment;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.ForkJoinPool;

/**
 * A CUDA event: a marker recorded into a stream. Fence events (timing disabled) order and
 * observe work; timing events also measure the GPU time between two records. Recording and
 * querying a warmed event allocate nothing.
 *
 * <p>An {@linkplain CudaContext#createInterprocessEvent interprocess event} is a fence that
 * another process can open ({@link #exportForIpc()}, then {@link Event#importFrom}
 * there) to wait for work this process queued. The imported event is an event of the importing
 * process (its own handle, destroyed there when closed), recorded and waited on like any other.
 */
public final class Event extends Owner {

    private final CudaContext context;
    private final ContextState state;
    private final Resource resource;
    private final boolean timing;
    /**
     * The capture the last record went into (null: none; see
     * {@link StreamState#captureOfNextWork()}): it marks a point of a graph, so a wait on it joins
     * that capture ({@link Stream#waitFor(Event)}) and {@link #onComplete} refuses it. Written
     * under the recording stream's lock, only when it changes.
     */
    private volatile CaptureScope capturedIn;

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

    /**
     * Opens an interprocess event another process exported ({@link #exportForIpc()};
     * {@code cuIpcOpenEventHandle}): a fence event of {@code context} that waits and queries see
     * the exporter's records through. Closing it destroys this process's handle only, after the
     * work queued here on it completed.
     *
     * @param context the context to open the event in
     * @param handle the handle the exporting process sent
     * @return the imported event, to close when done
     * @throws CudaException e.g. {@code CUDA_ERROR_INVALID_VALUE} for a handle of no live event,
     *     or one exported by this very process
     */
    public static Event importFrom(CudaContext context, IpcEventHandle handle) {
        Objects.requireNonNull(handle, "handle");
        context.checkOpen();
        context.state().reap();
        return new Event(context, Origin.IMPORTED, context.state().calls().ipc().openEvent(handle.driverHandle()));
    }

    /** {@return the context this event belongs to} */
    public CudaContext context() {
        return context;
    }

    /** {@return whether this event records timestamps ({@link CudaContext#createTimingEvent()})} */
    public boolean isTiming() {
        return timing;
    }

    /** {@return whether this event was opened from another process's handle ({@link Event#importFrom})} */
    public boolean isImported() {
        return resource.origin == Origin.IMPORTED;
    }

    /**
     * Exports this interprocess event for another process ({@code cuIpcGetEventHandle}), which
     * opens it with {@link Event#importFrom}. Record it after the work the other process
     * must wait for; the importer waits on its last record. Keep this event open until every
     * importer has closed its import (the driver leaves operations on an imported event whose
     * exporter destroyed it undefined).
     *
     * @return the handle to send to the other process
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

    /**
     * Records this event after the work queued so far on {@code stream}.
     *
     * @param stream a stream of this event's context
     */
    public void record(Stream stream) {
        resource.checkOpen();
        StreamState s = stream.openState();
        context.checkSame(stream.context(), "the stream");
        synchronized (s.lock()) { // no capture begins or ends between the check and the record
            s.checkOpen();
            resource.usedOn(s);
            CaptureScope into = s.captureOfNextWork();
            state.calls().events().record(resource.handle, s.handle());
            recordedInto(into);
        }
    }

    private void recordedInto(CaptureScope into) {
        if (capturedIn != into) {
            capturedIn = into;
        }
    }

    /**
     * {@return a future completed once the work before this event's last record (made before this call)
     * has completed, with the default executor {@link ForkJoinPool#commonPool()}; see
     * {@link #onComplete(Executor)}}
     */
    public CompletableFuture<Void> onComplete() {
        return onComplete(ForkJoinPool.commonPool());
    }

    /**
     * A future completed once the work before this event's last record has completed, without
     * blocking and without a thread per event: one of the context's watch streams (at most
     * eight, made on first use) waits for the record ({@code cuStreamWaitEvent}) and then runs
     * Gatun's host function, which completes the future through {@code executor} as
     * {@link Stream#onComplete(Executor)} does; nothing is queued on the stream the event was
     * recorded on. Never completes before the work: with a watch stream free, it completes when
     * the event does; with eight watches pending at once, it may also wait behind an earlier
     * watch on the same watch stream.
     *
     * <p>The record that counts is the last one made before this call: recording the event again
     * later does not move the wait (as for {@link Stream#waitFor(Event)}). An event never recorded
     * completes at once (as {@link #query()} says true). Cancelling the future detaches it, and a
     * poisoned or closed context fails it, as for {@link Stream#onComplete(Executor)}. The event
     * may be closed while the future is pending: its destroy waits for the watch.
     *
     * @param executor where the future is completed, and so where its dependent actions run
     * @return a future completed once the recorded work has completed
     * @throws IllegalStateException when the event is closed
     * @throws CaptureActiveException when its last record went into a stream capture: it marks a
     *     point of the graph, not of work that runs, and a wait on it would join the capture
     *     (record it on a stream that is not capturing, or ask the graph launch's stream)
     * @throws ContextPoisonedException when the context is poisoned already
     */
    public CompletableFuture<Void> onComplete(Executor executor) {
        Objects.requireNonNull(executor, "executor");
        resource.checkOpen();
        if (capturedIn != null) {
            throw new CaptureActiveException(this + " was last recorded into a stream capture, which makes it a point "
                    + "of the graph, not of work that runs; a completion future would join the capture. Record it on a "
                    + "stream that is not capturing, or ask Stream.onComplete after the graph launch.");
        }
        return state.watches().after(resource.handle, resource, executor, "Event.onComplete");
    }

    /**
     * Notes that a launch on {@code s} records this event (a launch attribute; call under the
     * stream's lock, before the launch): whether that record goes into a capture.
     */
    void recordedBy(StreamState s) {
        recordedInto(s.captureOfNextWork());
    }

    /** The Gatun capture the last record went into, {@link CaptureScope#FOREIGN}, or null. */
    CaptureScope capturedIn() {
        return capturedIn;
    }

    /** {@return whether the work before the last record has completed (true if never recorded)} Does not block. */
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
     *
     * @param start the event recorded at the start of the interval
     * @return the elapsed GPU time in milliseconds
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

    /** The handle for a wait on {@code stream} (under its lock); records that the event was used there. */
    MemorySegment handleForUse(StreamState stream) {
        resource.checkOpen();
        resource.usedOn(stream);
        return resource.handle;
    }

}
