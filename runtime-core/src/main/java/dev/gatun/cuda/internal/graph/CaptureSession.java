package dev.gatun.cuda.internal.graph;

import dev.gatun.cuda.CaptureActiveException;
import dev.gatun.cuda.CaptureArenaOverflowException;
import dev.gatun.cuda.CaptureInvalidatedException;
import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.internal.context.CaptureGate;
import dev.gatun.cuda.internal.context.CaptureScope;
import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.GraphAllocations;
import dev.gatun.cuda.internal.context.Holds;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.StreamState;
import dev.gatun.cuda.internal.driver.ConditionalCalls;
import dev.gatun.cuda.internal.driver.GraphCalls;
import dev.gatun.cuda.internal.events.GraphCaptureEvent;
import dev.gatun.cuda.internal.memory.ArenaSpace;
import dev.gatun.cuda.internal.memory.DeviceMemory;
import dev.gatun.cuda.internal.nvtx.AutomaticRanges;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One Gatun capture on one stream, from its begin to its end or abort: the capture gate's ticket
 * of a global-mode one, what the captured work uses (held, or refused when the capture lists its
 * buffers), what it allocates on the capturing stream ({@link CaptureMemory}), the graph state
 * made when a conditional handle or node first needs one, and the capture's end on the driver. The capturing stream's state names it as its
 * {@link CaptureScope} while it is open: that is how the stream, and streams that joined it, find
 * it ({@link #begunOn}), never through the public {@code StreamCapture}. See the package's
 * invariants.
 */
public final class CaptureSession implements CaptureScope {

    private static final Logger LOG = LoggerFactory.getLogger(CaptureSession.class);

    private final ContextState context;
    private final StreamState stream;
    /** The capturing stream's name, for messages (the session never calls back into the Stream). */
    private final String streamName;
    private final CaptureMode mode;
    private final CaptureGate.CaptureTicket ticket;
    /** The thread that began the capture: the only one the driver lets end a global or thread-local one. */
    private final Thread beganOn = Thread.currentThread();
    /** What the captured work uses: the capture's own, or, into a body, the holds of the graph that owns it. */
    private final Holds holds;
    /** The buffers the capture may use, or null for any. */
    private final Set<NativeResource> allowed;
    /** What the capture allocates on its stream, which it may use whatever {@link #allowed} lists. */
    private final CaptureMemory memory;
    /** The conditional node's body this capture records into, or null for a new graph. */
    private final NodeBuilder body;
    /** Cleared under the capturing stream's lock right after the driver ended the capture. */
    private volatile boolean recording = true;
    /** Whether {@link #finish} was called: the capture is over for its owner (guarded by this). */
    private boolean finished;
    /** The JFR event of this capture, begun with it; null while no recording enables it. */
    private GraphCaptureEvent event;
    /** Its NVTX range from begin to end, when Gatun's ranges are on (a range of the process: any thread may end it). */
    private long range;
    /**
     * For a capture into a new graph, the state of the graph being captured into, made when a
     * conditional handle or node first needed it; else null (guarded by the stream's lock).
     */
    private GraphState captured;

    /** The arena a capture allocates from ({@code space}), its place in it, and the arena's name for messages. */
    public record ArenaUse(ArenaSpace space, ArenaSpace.Cursor cursor, String name) {
    }

    /** A graph a capture recorded, and the handles of its allocations still open at the end, in allocation order. */
    public record Ended(GraphState graph, List<Object> allocations) {
    }

    private CaptureSession(StreamState stream, String streamName, CaptureMode mode, CaptureGate.CaptureTicket ticket,
            Set<NativeResource> allowed, Holds holds, ArenaUse arena, NodeBuilder body) {
        this.context = stream.context();
        this.stream = stream;
        this.streamName = streamName;
        this.mode = mode;
        this.ticket = ticket;
        this.allowed = allowed;
        this.holds = holds;
        this.memory = new CaptureMemory(stream, this, arena);
        this.body = body;
    }

    /**
     * Begins capturing {@code stream} into a new graph ({@code cuStreamBeginCapture}); see
     * {@code Stream.beginCapture}. {@code allowed} null admits every buffer; {@code arena} null
     * makes its allocations memory nodes, else its cursor is closed when the begin fails.
     *
     * @throws CaptureActiveException when a global-mode capture cannot enter the gate in time
     * @throws IllegalStateException when the stream is closed or capturing
     */
    public static CaptureSession begin(StreamState stream, String streamName, CaptureMode mode,
            Set<NativeResource> allowed, ArenaUse arena) {
        return begin(stream, streamName, mode, allowed, arena, null);
    }

    /**
     * Begins capturing {@code stream} into {@code body}, a conditional node's body
     * ({@code cuStreamBeginCaptureToGraph}); what the work uses, the graph that owns the body holds.
     *
     * @throws IllegalStateException also when another capture records into the body already
     */
    public static CaptureSession intoBody(StreamState stream, String streamName, CaptureMode mode, NodeBuilder body) {
        GraphState g = body.graph();
        synchronized (g.building) {
            if (body.body().capturing) {
                throw new IllegalStateException("a stream capture records into " + body.name() + " already; end it first");
            }
            body.body().capturing = true;
            g.capturesOpen++;
        }
        boolean begun = false;
        try {
            checkThread(mode);
            CaptureSession session = begin(stream, streamName, mode, null, null, body);
            begun = true;
            return session;
        } finally {
            if (!begun) {
                bodyCaptureOver(body, null);
            }
        }
    }

    /**
     * Refuses a global or thread-local capture on a virtual thread, before any driver call.
     *
     * @throws IllegalStateException on a virtual thread, unless {@code mode} is relaxed
     */
    public static void checkThread(CaptureMode mode) {
        if (mode != CaptureMode.RELAXED && Thread.currentThread().isVirtual()) {
            // The driver ties a global or thread-local capture to the OS thread that began it: only
            // that thread may end it (CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD), and a thread-local
            // one forbids unsafe calls to that OS thread, which here is a carrier other virtual
            // threads run on too. A virtual thread changes carriers whenever it parks.
            throw new IllegalStateException("a " + mode + " capture cannot begin on a virtual thread ("
                    + Thread.currentThread() + "): CUDA ties global and thread-local captures to the OS thread "
                    + "that began them (only it may end one; a thread-local one forbids unsafe calls to that OS "
                    + "thread, which other virtual threads share), and a virtual thread moves to another OS thread "
                    + "whenever it parks. Capture in RELAXED mode, or on a platform thread");
        }
    }

    private static CaptureSession begin(StreamState s, String streamName, CaptureMode mode,
            Set<NativeResource> allowed, ArenaUse arena, NodeBuilder body) {
        Objects.requireNonNull(mode, "mode");
        ContextState context = s.context();
        CaptureGate.CaptureTicket ticket = mode == CaptureMode.GLOBAL ? enterGate(context, streamName) : null;
        boolean begun = false;
        try {
            CaptureSession session = new CaptureSession(s, streamName, mode, ticket, allowed,
                    body == null ? new Holds() : body.graph().holds, arena, body);
            synchronized (s.lock()) {
                if (s.closed()) {
                    throw new IllegalStateException(streamName + " is closed");
                }
                if (s.queuesIntoCapture()) {
                    throw new IllegalStateException(streamName + " is already capturing (a capture begun on it, or one "
                            + "it joined by waiting on an event recorded in it); a stream captures one graph at a time");
                }
                // Work queued before the capture still runs while the stream captures, when no
                // fence can be recorded on it: synchronous reads wait on this one instead.
                s.fenceBeforeCapture();
                context.captures().beginning(); // before the driver call, so that capturing() asks the driver from now on
                try {
                    if (body == null) {
                        context.calls().graphs().beginCapture(s.handle(), code(mode));
                    } else {
                        context.calls().conditionals().beginCaptureToGraph(s.handle(), body.handle(), code(mode));
                    }
                } catch (RuntimeException e) {
                    endUntracked(s, e, body != null); // the begin may have taken effect before it failed
                    throw e;
                }
                session.event = GraphCaptureEvent.start();
                if (AutomaticRanges.ON) {
                    session.range = AutomaticRanges.start(AutomaticRanges.named("capture " + streamName));
                }
                s.setCaptureScope(session); // from here, the stream's allocations and its joiners find it
                begun = true;
                return session;
            }
        } finally {
            if (!begun && ticket != null) {
                context.gate().exitCapture(ticket);
            }
            if (!begun && arena != null) {
                arena.cursor().close(); // the capture never began: its arena range comes back
            }
        }
    }

    private static CaptureGate.CaptureTicket enterGate(ContextState context, String stream) {
        try {
            return context.gate().enterCapture();
        } catch (CaptureGate.GateException e) {
            throw new CaptureActiveException("a global-mode capture on " + stream + " could not begin: "
                    + e.getMessage() + ". Capture in thread-local mode, or begin it outside synchronizing calls");
        }
    }

    private static int code(CaptureMode mode) {
        return switch (mode) {
            case GLOBAL -> GraphCalls.MODE_GLOBAL;
            case THREAD_LOCAL -> GraphCalls.MODE_THREAD_LOCAL;
            case RELAXED -> GraphCalls.MODE_RELAXED;
        };
    }

    /**
     * {@return the open Gatun capture begun on {@code stream}, or null} (Read under the stream's
     * lock to act on it; a stream that joined another stream's capture has none of its own.)
     */
    public static CaptureSession begunOn(StreamState stream) {
        return stream.captureScope() instanceof CaptureSession c && c.stream == stream ? c : null;
    }

    // ---- what the captured work uses (CaptureScope) ----

    @Override
    public String conditionalBody() {
        return body == null ? null : body.name();
    }

    @Override
    public void admit(NativeResource resource) {
        if (body != null && resource.kind() == OwnerKind.HOST_CALLBACK) {
            throw new IllegalStateException("the capture on " + streamName + " records into " + body.name() + ", and "
                    + "the driver allows no host node in a conditional body; run the host function before or after "
                    + "the conditional node, in the capture that holds it");
        }
        if (allowed != null && resource.kind() == OwnerKind.DEVICE_BUFFER && !allowed.contains(resource)
                && !memory.madeHere(resource)) {
            throw new IllegalStateException(resource.identity() + " is not one of the buffers the capture on "
                    + streamName + " may use; list it when beginning the capture, or queue this work outside it");
        }
        // On a stream that joined the capture, the admission may come just after the end, when
        // the holds were handed on or dropped: that work was not captured, and needs no hold.
        holds.addUnlessReleased(resource);
    }

    @Override
    public GraphAllocations allocations() {
        return memory.allocations();
    }

    @Override
    public boolean isOpen() {
        return recording;
    }

    @Override
    public boolean begunOn(Thread thread) {
        return beganOn == thread;
    }

    // ---- allocations on the capturing stream ----

    /**
     * A stream-ordered allocation of {@code bytes} (more than 0) on the capturing stream (call
     * under its lock, which the capture's end takes too): an allocation node of the graph, or the
     * next range of the capture's arena, at an address fixed for the graph's life. Hand the
     * handle that claims it to {@link #claimed}.
     *
     * @throws IllegalStateException in a capture into a body, or one with conditional handles or nodes
     * @throws CaptureArenaOverflowException when the arena cannot give {@code bytes}
     */
    public DeviceMemory allocate(long bytes) {
        if (body != null) {
            throw new IllegalStateException("the capture on " + streamName + " records into " + body.name() + ", and "
                    + "the driver allows no memory allocation node in a conditional body; allocate before the capture "
                    + "that holds the conditional node (or in it, before the node), and use the buffer in the body");
        }
        if (captured != null) {
            throw new IllegalStateException("the capture on " + streamName + " has conditional handles or nodes, and "
                    + "Gatun does not mix those with allocations in one capture; allocate before the capture begins");
        }
        return memory.allocate(bytes);
    }

    /**
     * {@code handle} claimed {@code allocation}, which {@link #allocate} just made (under the
     * stream's lock): the captured work may use it, and the capture holds it, as everything its
     * work uses.
     */
    public void claimed(DeviceMemory allocation, Object handle) {
        memory.claimed(allocation, handle);
    }

    /** {@return the bytes this capture has taken from its arena so far: its peak} */
    public long arenaPeakBytes() {
        return memory.arenaPeakBytes();
    }

    // ---- conditional handles and nodes ----

    /** {@return the capturing stream's lock, under which conditional handles and nodes are added to the capture} */
    public Object lock() {
        return stream.lock();
    }

    /** {@return the capturing stream's handle} */
    public MemorySegment streamHandle() {
        return stream.handle();
    }

    /**
     * Under the stream's lock: checks that this capture is open and may hold conditional nodes,
     * reads its graph and dependencies ({@code cuStreamGetCaptureInfo_v3}), and, for a capture
     * into a new graph, makes the state of that graph the first time ({@link #captured()}).
     *
     * @param action what is refused, in words
     */
    public ConditionalCalls.CaptureInfo conditionalInfo(String action) {
        if (stream.captureScope() != this) {
            throw new IllegalStateException("cannot " + action + " the capture on " + streamName + ": it is over (ended "
                    + "or aborted)");
        }
        String allocating = memory.refusalOfConditionals();
        if (allocating != null) {
            throw new IllegalStateException("cannot " + action + " the capture on " + streamName + ": it " + allocating
                    + ", and Gatun does not mix graph memory with conditional nodes in one capture; allocate before "
                    + "the capture begins");
        }
        ConditionalCalls.CaptureInfo info = context.calls().conditionals().captureInfo(stream.handle());
        if (!info.active()) {
            throw new IllegalStateException("cannot " + action + " the capture on " + streamName + ": the driver "
                    + "reports it invalidated (a call it forbids during a capture ran); abort it and capture again");
        }
        if (body == null && captured == null) {
            captured = GraphState.ofCapture(context, info.graph(), holds);
        }
        return info;
    }

    /**
     * {@return the state of the graph a capture into a new graph records into, once
     * {@link #conditionalInfo} made it; else null} (Under the stream's lock, or after the end.)
     */
    public GraphState captured() {
        return captured;
    }

    // ---- the end ----

    /**
     * Ends (or aborts) the capture for its owner, once, on the thread the driver lets end it.
     *
     * @throws IllegalStateException when it was ended or aborted already, or, for a global or
     *     thread-local capture, on another thread than the one that began it
     */
    public synchronized void finish(String action) {
        if (finished) {
            throw new IllegalStateException("cannot " + action + " the capture on " + streamName
                    + ": it was already ended or aborted");
        }
        if (mode != CaptureMode.RELAXED && Thread.currentThread() != beganOn) {
            // The driver would refuse (CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD) and leave the
            // capture running; refused here, the capture stays open for its own thread to end.
            throw new IllegalStateException("cannot " + action + " the " + mode + " capture on " + streamName
                    + " from thread '" + Thread.currentThread().getName() + "': it was begun on thread '"
                    + beganOn.getName() + "', and only that thread can end or abort it (capture in RELAXED mode to end "
                    + "it elsewhere)");
        }
        finished = true;
    }

    /** {@return whether the capture was ended or aborted ({@link #finish})} */
    public synchronized boolean finished() {
        return finished;
    }

    /**
     * Ends the capture on the driver (after {@link #finish}) and returns the handle of what it
     * recorded. For a capture into a body, that body then holds the work and its nodes are counted.
     * On failure the capture is over and holds nothing (a body keeps what was recorded, and its
     * graph is marked unusable); the caller closes the owner of {@link #captured()}, which the
     * driver destroyed.
     *
     * @throws CaptureInvalidatedException when something invalidated the capture
     * @throws CudaException when the driver fails otherwise
     */
    public MemorySegment end() {
        MemorySegment graph;
        try {
            graph = endOnStream();
        } catch (RuntimeException e) {
            memory.discard(); // no graph: its allocation nodes allocated nothing
            if (body != null) {
                bodyCaptureOver(body, "the capture into " + body.name() + " failed (" + e.getMessage() + ") and may "
                        + "have left part of its work in it, which the driver cannot take back: build the graph again");
            } else {
                holds.releaseAll(); // nothing needs what the work used
            }
            memory.closeDiscarded();
            record("invalidated");
            throw invalidated(e);
        } finally {
            exitGate();
        }
        record("ended");
        if (body != null) { // the work is in the body, which its graph holds; the capture made no graph
            bodyCaptureOver(body, null);
            countCapturedNodes();
        }
        return graph;
    }

    /**
     * The graph a capture into a new graph recorded ({@code recorded}, from {@link #end()}, when
     * no {@link #captured()} state was made): it takes the capture's holds, allocations and arena.
     */
    public Ended graphOf(MemorySegment recorded) {
        List<Object> open = memory.ended();
        GraphAllocations nodes = memory.allocations();
        return new Ended(GraphState.captured(context, recorded, holds, nodes.any() ? nodes : null,
                memory.arenaSpace()), open);
    }

    /**
     * Abandons the capture (after {@link #finish}): the stream stops capturing, whatever was
     * recorded is destroyed and every hold is dropped; returns false when the driver had
     * invalidated it (nothing to destroy). The caller then closes the owner of {@link #captured()},
     * destroyed by the driver unless this returned true.
     *
     * @throws CudaException when the driver fails to end the capture for another reason
     */
    public boolean abort() {
        record("aborted");
        MemorySegment partial;
        boolean ended = false;
        try {
            partial = endOnStream();
            ended = true;
        } catch (CudaException e) {
            if (e.result() != GraphCalls.CAPTURE_INVALIDATED) {
                throw e;
            }
            LOG.debug("The aborted capture on {} was invalidated; nothing to destroy", streamName);
            return false;
        } finally {
            exitGate();
            memory.discard();
            if (body != null) { // what was recorded stays in the body: the graph that owns it keeps holding it
                bodyCaptureOver(body, "the capture into " + body.name() + " was aborted, and the part of its work "
                        + "recorded before stays in it (the driver cannot take it back): build the graph again");
            } else {
                holds.releaseAll(); // nothing will be launched from what was recorded
            }
            memory.closeDiscarded();
        }
        if (body == null && captured == null) {
            GraphState.discard(context, partial);
        }
        return true;
    }

    /**
     * Ends the capture on the driver and, under the same hold of the stream's lock, clears its
     * scope: work queued on this stream is either captured and admitted, or queued after the end
     * and not captured; a stream that joined the capture leaves it once the scope is closed.
     */
    private MemorySegment endOnStream() {
        synchronized (stream.lock()) {
            try {
                MemorySegment graph = context.calls().graphs().endCapture(stream.handle());
                context.captures().ended();
                return graph;
            } catch (RuntimeException e) {
                endUntracked(stream, e, body != null); // a refused end leaves the capture running
                throw e;
            } finally {
                recording = false;
                stream.setCaptureScope(null);
            }
        }
    }

    /**
     * After a begin or end that failed (call under the stream's lock): if the driver
     * still reports a capture on {@code s}, which Gatun no longer tracks, ends it and
     * destroys what it recorded. Otherwise the stream would record, not run, all later work
     * queued on it, and could never be closed. What fails here is added to {@code failure}. A
     * capture {@code intoBody} is ended without a destroy: the body belongs to its node.
     */
    private static void endUntracked(StreamState s, RuntimeException failure, boolean intoBody) {
        try {
            if (s.capturing()) {
                MemorySegment recorded = s.context().calls().graphs().endCapture(s.handle());
                if (!intoBody) {
                    GraphState.discard(s.context(), recorded);
                }
            }
            if (!s.capturing()) {
                s.context().captures().ended();
            } // else the capture runs on untracked: it stays counted, so every stream keeps asking the driver
        } catch (RuntimeException e) {
            failure.addSuppressed(e);
        }
    }

    /**
     * A capture into {@code body} is over: {@code failure} null when it ended with its work in the
     * body (whose nodes are then counted, so an empty body is still refused at instantiation);
     * otherwise why part of its work may be left there, which makes the graph unusable.
     */
    private static void bodyCaptureOver(NodeBuilder body, String failure) {
        GraphState g = body.graph();
        synchronized (g.building) {
            body.body().capturing = false;
            g.capturesOpen--;
            if (failure != null) {
                g.markUnusable(failure);
            }
        }
    }

    /**
     * Counts the nodes this capture just recorded into its body ({@code cuGraphGetNodes}); call after
     * a successful end. When the listing fails, the graph is marked unusable, since whether the
     * body is empty is then unknown, and the failure is thrown.
     */
    private void countCapturedNodes() {
        GraphState g = body.graph();
        synchronized (g.building) {
            try (Arena arena = Arena.ofConfined()) {
                long listed = context.calls().graphs().nodes(body.handle(), arena).byteSize()
                        / ValueLayout.ADDRESS.byteSize();
                GraphState.Body b = body.body();
                b.nodes += (int) listed - (b.nodes - b.removed);
            } catch (RuntimeException e) {
                g.markUnusable("the nodes captured into " + body.name() + " could not be listed (" + e.getMessage()
                        + "), so whether it is empty is unknown: build the graph again");
                throw e;
            }
        }
    }

    private void exitGate() {
        if (ticket != null) {
            context.gate().exitCapture(ticket);
        }
    }

    private void record(String outcome) {
        if (AutomaticRanges.ON) {
            AutomaticRanges.end(range);
        }
        if (event != null) {
            event.device = context.device();
            event.stream = streamName;
            event.mode = mode.name();
            event.outcome = outcome;
            event.commit();
        }
    }

    private RuntimeException invalidated(RuntimeException e) {
        if (!(e instanceof CudaException c) || c.result() != GraphCalls.CAPTURE_INVALIDATED) {
            return e;
        }
        String why = mode == CaptureMode.GLOBAL
                ? "a device-synchronizing call probably ran during this global-mode capture, from a thread or "
                        + "through a handle Gatun's capture gate does not cover: move it out of the capture, or "
                        + "capture in thread-local mode"
                : "a call the driver forbids during a capture ran on the capturing thread, or work was joined "
                        + "from a stream that was not capturing: move it out of the capture";
        String outcome = body == null ? "so no graph came of it and it holds nothing"
                : "and part of its work may be left in " + body.name() + ", so the graph that owns it cannot be "
                        + "instantiated";
        return new CaptureInvalidatedException("the capture on " + streamName + " was invalidated before it ended, "
                + outcome + "; " + why, c);
    }
}
