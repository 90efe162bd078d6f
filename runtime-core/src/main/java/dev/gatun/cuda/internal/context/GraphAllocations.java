package dev.gatun.cuda.internal.context;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The stream-ordered allocations one Gatun capture made on its stream, and then the graph's
 * they became. Inside a capture, {@code cuMemAllocAsync} records an allocation node and returns
 * its address at once: the address is the graph's for its whole life (every launch allocates at
 * it), but memory exists there only from a launch's allocation node on. A {@code cuMemFreeAsync}
 * of it on the capturing stream records a free node; an allocation not freed inside the capture
 * stays allocated after each launch, until freed outside the graph.
 *
 * <p>Each allocation moves through {@link State}: made {@code IN_CAPTURE}; closed by its owner
 * while the capture is open, {@code FREED_IN_CAPTURE} (a free node was recorded); when the
 * capture ends, the rest are {@code IN_GRAPH}; when it is aborted or invalidated, they are
 * {@code DISCARDED} (their nodes are destroyed with what was recorded, so nothing was ever
 * allocated). Only an {@code IN_GRAPH} allocation of a graph that was launched is backed by
 * memory, and only it is freed by the driver at retirement. Transitions happen under the
 * capturing stream's lock, the lock a capture's end also takes.
 */
public final class GraphAllocations {

    private static final Logger LOG = LoggerFactory.getLogger(GraphAllocations.class);

    /** Where one allocation stands; see the class comment. */
    public enum State {
        IN_CAPTURE, FREED_IN_CAPTURE, IN_GRAPH, DISCARDED
    }

    /** One allocation made in the capture: the state its owner's resource asks about. */
    public final class Allocation {
        private final long bytes;
        /** The resource of the buffer that owns it, whose uses a relaunch orders after; set once, as it is made. */
        private NativeResource owner;
        /** Guarded by the stream's lock; read without it once the capture is over. */
        private volatile State state = State.IN_CAPTURE;

        private Allocation(long bytes) {
            this.bytes = bytes;
        }

        public State state() {
            return state;
        }

        /** Whether memory is allocated at its address: it belongs to a graph an executable has launched. */
        public boolean backed() {
            return state == State.IN_GRAPH && launched;
        }

        /**
         * At its owner's close: while the capture is still open, records a free node
         * ({@code cuMemFreeAsync} on the capturing stream), so that every launch frees what it
         * allocated. Nothing is fenced or synchronized: the free is captured, not run. When the
         * free cannot be recorded the allocation stays in the capture, and then in its graph,
         * which frees it after its last launch.
         */
        public void closedDuringCapture(long address) {
            synchronized (stream.lock()) {
                if (state != State.IN_CAPTURE || stream.captureScope() != scope) {
                    return; // the capture is over: the graph (or the discard) decides
                }
                // The address came from cuMemAllocAsync on this stream in the capture that is
                // still open (checked under the lock its end takes): the free becomes its node.
                int r = context.calls().memory().freeAsync(address, stream.handle());
                if (r != 0) {
                    LOG.warn("Recording the free of a graph allocation of {} bytes in the capture on {} failed ({}); "
                            + "it stays allocated by the graph, which frees it after the last launch", bytes, stream,
                            context.resultName(r));
                    return;
                }
                state = State.FREED_IN_CAPTURE;
            }
        }

        /**
         * Refuses work queued on {@code on} that cannot reach the memory: outside its capture
         * while the capture is open, and anywhere before an executable of its graph launched.
         *
         * @param owner names the buffer in the message
         */
        public void checkUsableOn(StreamState on, Object owner) {
            State s = state;
            if (s == State.IN_CAPTURE && on.captureScope() == scope || backed()) {
                return;
            }
            throw new IllegalStateException(owner + " " + unbacked() + "; queue work on it only in that capture "
                    + "until then");
        }

        /** Refuses a synchronous host operation before the memory exists (during the capture, or before a launch). */
        public void checkSynchronous(String operation, Object owner) {
            if (!backed()) {
                throw new IllegalStateException(operation + " of " + owner + " would read or write memory that does "
                        + "not exist yet: it " + unbacked() + "; queue the copy inside the capture (Stream.copy), or "
                        + "launch an executable of its graph first");
            }
        }

        private String unbacked() {
            return state == State.IN_CAPTURE
                    ? "was allocated inside the capture on " + stream + ", which is still open, so its memory exists "
                            + "only once an executable of the captured graph has been launched"
                    : "belongs to the graph captured on " + stream + ", and its memory exists only once an executable "
                            + "of that graph has been launched";
        }

        /** Names the resource of the buffer made for it (call once, under the stream's lock, as it is made). */
        public void ownedBy(NativeResource resource) {
            owner = resource;
        }

        /** Its owner's retirement released it: counted out of the live graph allocations. */
        public void retired() {
            context.stats().graphAllocationsLive.decrement();
            context.stats().graphAllocationBytesLive.add(-bytes);
        }

        /** For the owner's identity. */
        public String describe() {
            return switch (state) {
                case IN_CAPTURE -> "allocated in the capture on " + stream;
                case FREED_IN_CAPTURE -> "freed in the capture on " + stream;
                case IN_GRAPH -> "allocation of the graph captured on " + stream + (launched ? "" : ", not launched yet");
                case DISCARDED -> "discarded with its capture on " + stream;
            };
        }
    }

    private final ContextState context;
    private final StreamState stream;
    private final CaptureScope scope;
    /** Guarded by the stream's lock. */
    private final List<Allocation> made = new ArrayList<>();
    /** An executable of the graph was launched: its allocations are backed from then on. */
    private volatile boolean launched;

    /** For the capture with {@code scope} on {@code stream}. */
    public GraphAllocations(StreamState stream, CaptureScope scope) {
        this.context = stream.context();
        this.stream = stream;
        this.scope = scope;
    }

    /**
     * Counts an allocation the driver just made on the capturing stream (call under its capture
     * lock, while the capture is open).
     */
    public Allocation add(long bytes) {
        Allocation a = new Allocation(bytes);
        made.add(a);
        context.stats().graphAllocations.increment();
        context.stats().graphAllocationsLive.increment();
        context.stats().graphAllocationBytesLive.add(bytes);
        return a;
    }

    /** Whether the capture recorded any allocation node (and so its graph has memory nodes). */
    public boolean any() {
        synchronized (stream.lock()) {
            return !made.isEmpty();
        }
    }

    /** The capture ended (call under the stream's lock): the allocations not freed in it are its graph's. */
    public void ended() {
        for (Allocation a : made) {
            if (a.state == State.IN_CAPTURE) {
                a.state = State.IN_GRAPH;
            }
        }
    }

    /** The capture was aborted or invalidated (call under the stream's lock): nothing was ever allocated. */
    public void discarded() {
        for (Allocation a : made) {
            if (a.state == State.IN_CAPTURE) {
                a.state = State.DISCARDED;
            }
        }
    }

    /** An executable of the graph was launched (the driver accepted it): its allocation nodes allocate. */
    public void launched() {
        if (!launched) {
            launched = true;
        }
    }

    /**
     * Before a relaunch on {@code launch}: each launch of the graph frees, in the launch stream's
     * order, what the previous one left allocated, and allocates it anew at the same address. The
     * work other streams queued on that memory (a reader of the graph's output on another stream)
     * must come first. Orders the context's synchronous stream after those streams and returns an
     * event recorded there after the waits, for {@code launch} to wait on under its lock (then
     * release it to the pool); null when nothing needs waiting for: the first launch, or no other
     * stream used an allocation. Call with no stream's lock held.
     */
    public MemorySegment relayBeforeRelaunch(StreamState launch) {
        if (!launched) {
            return null;
        }
        List<StreamState> others = null;
        synchronized (stream.lock()) { // made and moved to IN_GRAPH under it
            for (Allocation a : made) {
                if (a.state == State.IN_GRAPH && a.owner != null) {
                    others = a.owner.streamsUsedBesides(launch, others);
                }
            }
        }
        return others == null ? null : context.ordering().relayAfter(others);
    }

    /** The stream the capture ran on. */
    public StreamState stream() {
        return stream;
    }
}
