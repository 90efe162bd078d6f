package dev.gatun.cuda.internal.context;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * The context's own streams that turn an event's completion into a {@link CompletableFuture}
 * ({@code Event.onComplete}, {@code Fence.onComplete}): a watch queues a wait for the event
 * ({@code cuStreamWaitEvent}) and then {@link Completions}' host function on one of them. No
 * thread waits per event or per stream, and nothing is queued on the stream the event was
 * recorded on.
 *
 * <p>A watch goes to a watch stream with nothing queued ({@code cuStreamQuery}), where its future
 * completes exactly when its event does; when all are busy, to a new one, up to {@value #MAX};
 * past that, to the streams in turn, where it also waits behind that stream's earlier watches:
 * its future may then complete later than its event, never earlier. Made on first use, with no
 * section of the capture gate (a stream create, like {@code createStream}, does not synchronize);
 * never capturing, since callers refuse an event whose last record went into a capture (a wait
 * on it would join the capture); destroyed when the context closes, after the device
 * synchronized, like the pooled events (a poisoned context leaves them to the driver).
 */
public final class WatchStreams {

    /** At most this many watch streams per context. */
    public static final int MAX = 8;

    private final ContextState context;
    /** Guarded by this, as is every field below: picking a stream and queueing on it is one step. */
    private final List<StreamState> streams = new ArrayList<>(MAX);
    /** The stream the next watch goes to when all {@value #MAX} are busy. */
    private int turn;

    WatchStreams(ContextState context) {
        this.context = context;
    }

    /**
     * A new future, completed once the record of {@code event} made before this call has
     * completed (at once when it was never recorded: {@code cuStreamWaitEvent} then waits for
     * nothing). A later re-record does not move the wait.
     *
     * @param event a live event of this context whose last record was not into a stream capture;
     *     the caller keeps it from being destroyed until this returns
     * @param user the event's owner, which lists the watch stream so that its destroy waits for
     *     the wait; null for a fence's pooled event, whose return to the pool, like a
     *     {@code Stream.waitFor(Fence)}, leaves a wait already queued on its record unchanged
     * @param operation names the call in exceptions, e.g. "Event.onComplete"
     */
    public synchronized CompletableFuture<Void> after(MemorySegment event, NativeResource user, Executor executor,
            String operation) {
        context.calls().live(operation);
        context.checkOpen();
        StreamState watch = pick();
        if (user != null) {
            user.usedOn(watch);
        }
        context.calls().streams().waitEvent(watch.handle(), event);
        return Completions.after(watch, executor, operation);
    }

    /** How many watch streams the context has made (at most {@value #MAX}); none once it closed. */
    public synchronized int count() {
        return streams.size();
    }

    /** An idle watch stream, else a new one below the cap, else the next in turn. */
    private StreamState pick() {
        for (StreamState s : streams) {
            if (context.calls().streams().query(s.handle())) {
                return s;
            }
        }
        if (streams.size() < MAX) {
            StreamState s = new StreamState(context, context.calls().streams().create(0));
            streams.add(s);
            return s;
        }
        StreamState s = streams.get(turn);
        turn = (turn + 1) % MAX;
        return s;
    }

    /** Destroys the watch streams; at context shutdown, after the device synchronized, inside a section of the gate. */
    synchronized void destroy() {
        for (StreamState s : streams) {
            s.markDrained();
            // The device synchronized, so nothing is queued on it, and the context is closed, so
            // nothing will be.
            context.calls().streams().destroy(s.handle());
        }
        streams.clear();
    }
}
