package dev.gatun.cuda;

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
import dev.gatun.cuda.internal.memory.ArenaBlock;
import dev.gatun.cuda.internal.memory.ArenaSpace;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A capture in progress on one stream ({@link Stream#beginCapture}): work queued on the stream
 * from then on is recorded into a graph instead of running. {@link #end()} returns the
 * {@link Graph}; {@link #abort()} (or {@link #close()} of a capture not ended) drops what was
 * recorded and leaves nothing behind.
 *
 * <p>The capture holds every owner the captured work uses (buffers whose addresses it bakes in,
 * modules whose kernels it launches), even if they are closed meanwhile; the graph takes the
 * holds over. A {@linkplain CaptureMode#GLOBAL global-mode} capture holds its context's capture
 * gate until it ends, so Gatun's device-synchronizing calls on other threads wait instead of
 * invalidating it.
 *
 * <p>{@link Stream#allocate} on the capturing stream records an allocation node
 * ({@linkplain DeviceBuffer#isGraphAllocation() a graph allocation}); closing that buffer before
 * the capture ends records a free node. The buffers still open at {@link #end()} become the
 * graph's {@linkplain Graph#allocations() allocations}; an {@link #abort()}, or an end that finds
 * the capture invalidated, closes them, and since no launch ever allocated them, nothing is freed.
 *
 * <p>Conditional nodes can be captured, as NVIDIA's graphConditionalNodes sample does:
 * {@link #createConditionalHandle} creates a handle in the graph being captured, for kernels
 * captured afterwards to set; {@link #addIf}, {@link #addIfElse}, {@link #addWhile} and
 * {@link #addSwitch} add a node after the work captured so far and make the work captured next
 * wait for it; {@link Graph#beginCapture(Stream, CaptureMode)} captures another stream into the
 * node's body, and that capture's {@link #end()} returns the body.
 *
 * <pre>{@code
 * try (StreamCapture capture = stream.beginCapture(CaptureMode.THREAD_LOCAL)) {
 *     launch.launch(stream);                  // recorded, not run
 *     try (Graph graph = capture.end(); GraphExec exec = graph.instantiate()) {
 *         exec.launch(stream);                // runs it
 *     }
 * }
 * }</pre>
 */
public final class StreamCapture implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(StreamCapture.class);

    private final Stream stream;
    private final StreamState state;
    private final ContextState context;
    private final CaptureMode mode;
    private final Scope scope;
    private final CaptureGate.CaptureTicket ticket;
    /** The thread that began the capture: the only one the driver lets end a global or thread-local one. */
    private final Thread beganOn = Thread.currentThread();
    /** The JFR event of this capture, begun with it; null while no recording enables it. */
    private final GraphCaptureEvent event = GraphCaptureEvent.start();
    private boolean open = true; // guarded by this
    /** The buffers {@link Stream#allocate} made in this capture, in order (guarded by the stream's lock). */
    private final List<DeviceBuffer> allocated = new ArrayList<>();
    /** The arena {@link Stream#allocate} takes from ({@link CaptureArena#beginCapture}), or null for memory nodes. */
    private final CaptureArena arena;
    /** This capture's place in the arena (guarded by the stream's lock), or null without one. */
    private final ArenaSpace.Cursor cursor;
    /** The conditional node's body this capture records into ({@link Graph#beginCapture}), or null for a new graph. */
    private final Graph body;
    /**
     * The graph being captured into, as a {@link Graph} for its conditional handles and nodes:
     * the body, or for a capture into a new graph the one made when a handle or node first needed
     * it, else null (guarded by the stream's lock).
     */
    private Graph graph;

    /** What the captured work uses: held, or refused when the capture lists its buffers. */
    private static final class Scope implements CaptureScope {
        /** What the captured work uses: the capture's own, or, into a body, the holds of the graph that owns it. */
        final Holds holds;
        /** The buffers the capture may use, or null for any. */
        final Set<NativeResource> allowed;
        /** The capturing stream, named in refusals (the scope never calls back into the Stream). */
        final String stream;
        /** The allocations made in this capture, which it may use whatever {@link #allowed} lists. */
        final GraphAllocations allocations;
        /** Their resources (guarded by the stream's lock). */
        final Set<NativeResource> allocatedHere = Collections.newSetFromMap(new IdentityHashMap<>());
        /** Cleared under the capturing stream's lock right after the driver ended the capture. */
        private volatile boolean open = true;
        /** The thread that began the capture (a scope is made on it, just before the begin). */
        private final Thread beganOn = Thread.currentThread();
        /** The conditional body captured into, named in refusals; null for a capture into a new graph. */
        private final String body;

        Scope(Set<NativeResource> allowed, StreamState state, String stream, Holds holds, String body) {
            this.allowed = allowed;
            this.stream = stream;
            this.allocations = new GraphAllocations(state, this);
            this.holds = holds;
            this.body = body;
        }

        @Override
        public String conditionalBody() {
            return body;
        }

        @Override
        public void admit(NativeResource resource) {
            if (body != null && resource.kind() == OwnerKind.HOST_CALLBACK) {
                throw new IllegalStateException("the capture on " + stream + " records into " + body + ", and the "
                        + "driver allows no host node in a conditional body; run the host function before or after "
                        + "the conditional node, in the capture that holds it");
            }
            if (allowed != null && resource.kind() == OwnerKind.DEVICE_BUFFER && !allowed.contains(resource)
                    && !allocatedHere.contains(resource)) {
                throw new IllegalStateException(resource.identity() + " is not one of the buffers the capture on "
                        + stream + " may use; list it when beginning the capture, or queue this work outside it");
            }
            // On a stream that joined the capture, the admission may come just after the end, when
            // the holds were handed on or dropped: that work was not captured, and needs no hold.
            holds.addUnlessReleased(resource);
        }

        @Override
        public GraphAllocations allocations() {
            return allocations;
        }

        @Override
        public boolean isOpen() {
            return open;
        }

        @Override
        public boolean begunOn(Thread thread) {
            return beganOn == thread;
        }

        /** The driver ended the capture (call under the capturing stream's lock): joined streams leave it. */
        void close() {
            open = false;
        }
    }

    private StreamCapture(Stream stream, CaptureMode mode, Scope scope, CaptureGate.CaptureTicket ticket,
            CaptureArena arena, ArenaSpace.Cursor cursor, Graph body) {
        this.body = body;
        this.graph = body;
        this.arena = arena;
        this.cursor = cursor;
        this.stream = stream;
        this.state = stream.state();
        this.context = stream.context().state();
        this.mode = mode;
        this.scope = scope;
        this.ticket = ticket;
    }

    /** See {@link Stream#beginCapture(CaptureMode, Collection)}; {@code only} null admits every buffer. */
    static StreamCapture begin(Stream stream, CaptureMode mode, Collection<? extends DeviceBuffer> only) {
        return begin(stream, mode, only, null, null);
    }

    /** As {@link #begin(Stream, CaptureMode, Collection)}; allocations from {@code arena} at {@code cursor} when not null. */
    static StreamCapture begin(Stream stream, CaptureMode mode, Collection<? extends DeviceBuffer> only,
            CaptureArena arena, ArenaSpace.Cursor cursor) {
        return begin(stream, mode, only, arena, cursor, null);
    }

    /** See {@link Graph#beginCapture(Stream, CaptureMode)}: {@code body} is a conditional node's body. */
    static StreamCapture intoBody(Stream stream, CaptureMode mode, Graph body) {
        return begin(stream, mode, null, null, null, body);
    }

    private static StreamCapture begin(Stream stream, CaptureMode mode, Collection<? extends DeviceBuffer> only,
            CaptureArena arena, ArenaSpace.Cursor cursor, Graph body) {
        Objects.requireNonNull(mode, "mode");
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
        StreamState s = stream.state();
        Scope scope = new Scope(allowed(stream.context(), only), s, stream.toString(),
                body == null ? new Holds() : body.ownerHolds(), body == null ? null : body.bodyName());
        ContextState context = stream.context().state();
        CaptureGate.CaptureTicket ticket = mode == CaptureMode.GLOBAL ? enterGate(context, stream) : null;
        boolean begun = false;
        try {
            synchronized (s.lock()) {
                if (s.closed()) {
                    throw new IllegalStateException(stream + " is closed");
                }
                if (s.queuesIntoCapture()) {
                    throw new IllegalStateException(stream + " is already capturing (a capture begun on it, or one it "
                            + "joined by waiting on an event recorded in it); a stream captures one graph at a time");
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
                    endUntracked(stream, e, body != null); // the begin may have taken effect before it failed
                    throw e;
                }
                StreamCapture capture = new StreamCapture(stream, mode, scope, ticket, arena, cursor, body);
                s.setCaptureScope(scope);
                stream.capturing(capture);
                begun = true;
                return capture;
            }
        } finally {
            if (!begun && ticket != null) {
                context.gate().exitCapture(ticket);
            }
            if (!begun && cursor != null) {
                cursor.close();
            }
        }
    }

    private static Set<NativeResource> allowed(CudaContext context, Collection<? extends DeviceBuffer> only) {
        if (only == null) {
            return null;
        }
        Set<NativeResource> allowed = Collections.newSetFromMap(new IdentityHashMap<>());
        for (DeviceBuffer b : only) {
            context.checkSame(b.context(), b);
            allowed.add(b.resource());
        }
        return allowed;
    }

    private static CaptureGate.CaptureTicket enterGate(ContextState context, Stream stream) {
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

    /** {@return the stream being captured} */
    public Stream stream() {
        return stream;
    }

    /** {@return the capture mode it was begun in} */
    public CaptureMode mode() {
        return mode;
    }

    /** {@return whether the capture is still recording (neither ended nor aborted)} */
    public synchronized boolean isOpen() {
        return open;
    }

    /**
     * Ends the capture.
     *
     * @return the graph it recorded, holding every owner the recorded work uses; for a capture into
     *     a conditional node's body ({@link Graph#beginCapture(Stream, CaptureMode)}), that body, which
     *     now holds the recorded work (the graph that owns it holds what the work uses)
     * @throws CaptureInvalidatedException (a {@link CudaException}) when something invalidated the
     *     capture; it is over then, and holds nothing
     * @throws CudaException when the driver fails otherwise; the capture is over for Gatun and
     *     holds nothing
     * @throws IllegalStateException when the capture was already ended or aborted
     */
    public Graph end() {
        finish("end");
        MemorySegment graph;
        try {
            graph = endOnStream();
        } catch (RuntimeException e) {
            discardAllocations(); // no graph: its allocation nodes allocated nothing
            if (body != null) {
                body.bodyCaptureOver("the capture into " + body + " failed (" + e.getMessage() + ") and may have left "
                        + "part of its work in it, which the driver cannot take back: build the graph again");
            } else {
                scope.holds.releaseAll(); // nothing needs what the work used
                captureGraphOver(true); // the driver destroyed it: no graph came of the capture
            }
            closeAllocations();
            record("invalidated");
            throw invalidated(e);
        } finally {
            exitGate();
        }
        record("ended");
        if (body != null) { // the work is in the body, which its graph holds; the capture made no graph
            body.bodyCaptureOver(null);
            body.countCapturedNodes();
            return body;
        }
        Graph made = capturedGraph();
        if (made != null) { // a handle or node needed it: the capture allocated nothing and used no arena
            made.captureOver(false, false);
            return made;
        }
        List<DeviceBuffer> buffers;
        synchronized (state.lock()) {
            closeCursor();
            scope.allocations.ended();
            buffers = new ArrayList<>(allocated.size());
            for (DeviceBuffer b : allocated) {
                if (!b.isClosed()) { // closed in the capture: a free node freed it
                    buffers.add(b);
                }
            }
        }
        return new Graph(stream.context(), graph, scope.holds, scope.allocations.any() ? scope.allocations : null,
                buffers, arena == null ? null : arena.space());
    }

    /**
     * A stream-ordered allocation on the capturing stream ({@link Stream#allocate} while this
     * capture is open; call under the stream's lock, which its end takes too): an allocation node
     * of the graph, whose address is fixed for the graph's life.
     */
    DeviceBuffer allocate(long bytes) {
        if (body != null) {
            throw new IllegalStateException("the capture on " + stream + " records into " + body + ", and the driver "
                    + "allows no memory allocation node in a conditional body; allocate before the capture that holds "
                    + "the conditional node (or in it, before the node), and use the buffer in the body");
        }
        if (graph != null) {
            throw new IllegalStateException("the capture on " + stream + " has conditional handles or nodes, and Gatun "
                    + "does not mix those with allocations in one capture; allocate before the capture begins");
        }
        DeviceBuffer buffer = cursor == null || cursor.measuring()
                ? DeviceBuffer.allocateInCapture(stream.context(), state, scope.allocations, measured(bytes))
                : DeviceBuffer.ofArena(fromArena(bytes));
        scope.allocatedHere.add(buffer.resource());
        allocated.add(buffer);
        buffer.resource().usedOn(state); // the capture holds it, as everything its work uses
        return buffer;
    }

    /**
     * {@return a new conditional handle of the graph being captured ({@code cuStreamGetCaptureInfo_v3} for
     * the graph, then {@code cuGraphConditionalHandleCreate}) that every launch sets to
     * {@code defaultValue} before any node runs} Kernels captured from now on may take it as an
     * argument ({@link ConditionalHandle#asKernelArg()}) and set it; a conditional node added to
     * this capture ({@link #addIf}, {@link #addWhile}, ...) or inside one of its bodies must use it
     * before the graph is instantiated. Its {@link ConditionalHandle#graph()} is the graph
     * {@link #end()} will return (for a capture into a body, that body).
     *
     * @param defaultValue read as unsigned, as the device reads it
     * @throws IllegalStateException when the capture is over or was invalidated (abort it), or has
     *     allocated on its stream or takes from a capture arena (Gatun does not mix graph memory
     *     with conditional nodes in one capture)
     * @throws DriverTooOldException on a driver older than CUDA 12.3, before any driver call
     */
    public ConditionalHandle createConditionalHandle(int defaultValue) {
        synchronized (state.lock()) {
            capturedGraph("create a conditional handle in");
            return graph.createConditionalHandle(defaultValue);
        }
    }

    /**
     * {@return a new conditional handle of the graph being captured whose value no launch resets} See
     * {@link Graph#createConditionalHandleSetByKernels()}; otherwise as
     * {@link #createConditionalHandle(int)}.
     */
    public ConditionalHandle createConditionalHandleSetByKernels() {
        synchronized (state.lock()) {
            capturedGraph("create a conditional handle in");
            return graph.createConditionalHandleSetByKernels();
        }
    }

    /**
     * Adds an IF node to the graph being captured, after the work captured so far, and makes the
     * work captured from now on wait for it: its body runs once when {@code handle}'s value is
     * not 0 as the node starts. Reads the capture's graph and dependencies
     * ({@code cuStreamGetCaptureInfo_v3}), adds the node after them with their edge data
     * ({@code cuGraphAddNode_v2}) and makes it the capture's only dependency
     * ({@code cuStreamUpdateCaptureDependencies_v2}, {@code CU_STREAM_SET_CAPTURE_DEPENDENCIES}),
     * all under the stream's lock, so no work is queued on the stream in between. Fill the body by
     * capturing another stream into it ({@link Graph#beginCapture(Stream, CaptureMode)}) or with
     * the body's add methods.
     *
     * @param handle a handle of the graph being captured ({@link #createConditionalHandle}), or
     *     of a graph this capture's body is inside
     * @return the node, with its body
     * @throws IllegalArgumentException for a handle of another graph
     * @throws IllegalStateException as {@link #createConditionalHandle(int)}
     * @throws DriverTooOldException on a driver older than CUDA 12.3, before any driver call
     * @throws CudaException when the driver fails; when the node was added but could not be made
     *     the capture's dependency, the graph refuses to be instantiated (abort and capture again)
     */
    public ConditionalNode addIf(ConditionalHandle handle) {
        return addConditional(handle, ConditionalNode.Type.IF, 1);
    }

    /**
     * Adds an IF node with an ELSE body: {@code bodies().get(0)} runs when the value is not 0,
     * {@code bodies().get(1)} when it is 0. Otherwise as {@link #addIf}.
     *
     * @param handle a handle of the graph being captured, or of a graph this capture's body is inside
     * @return the node, with its two bodies
     * @throws DriverTooOldException on a driver older than CUDA 12.8, before any driver call
     */
    public ConditionalNode addIfElse(ConditionalHandle handle) {
        return addConditional(handle, ConditionalNode.Type.IF, 2);
    }

    /**
     * Adds a WHILE node: its body runs while {@code handle}'s value is not 0, checked as the node
     * starts and after each run; a kernel of the body must set it to 0 at some point. Otherwise as
     * {@link #addIf}.
     *
     * @param handle a handle of the graph being captured, or of a graph this capture's body is inside
     * @return the node, with its body
     */
    public ConditionalNode addWhile(ConditionalHandle handle) {
        return addConditional(handle, ConditionalNode.Type.WHILE, 1);
    }

    /**
     * Adds a SWITCH node with {@code cases} bodies: body number {@code value} runs when it is below
     * {@code cases}, none otherwise. Otherwise as {@link #addIf}.
     *
     * @param handle a handle of the graph being captured, or of a graph this capture's body is inside
     * @param cases how many bodies the node has, at least 1
     * @return the node, with its bodies
     * @throws IllegalArgumentException also when {@code cases} is less than 1
     * @throws DriverTooOldException on a driver older than CUDA 12.8, before any driver call
     */
    public ConditionalNode addSwitch(ConditionalHandle handle, int cases) {
        if (cases < 1) {
            throw new IllegalArgumentException("a SWITCH node needs at least one case, not " + cases);
        }
        return addConditional(handle, ConditionalNode.Type.SWITCH, cases);
    }

    private ConditionalNode addConditional(ConditionalHandle handle, ConditionalNode.Type type, int bodies) {
        Objects.requireNonNull(handle, "handle");
        synchronized (state.lock()) { // the dependencies read are the capture's until the node replaces them
            ConditionalCalls.CaptureInfo info = capturedGraph("add a conditional node to");
            return graph.addConditionalToCapture(handle, type, bodies, info, state.handle());
        }
    }

    /**
     * Under the stream's lock: checks that this capture is open and may hold conditional nodes,
     * reads its graph and dependencies, and makes {@link #graph} the first time.
     */
    private ConditionalCalls.CaptureInfo capturedGraph(String action) {
        if (state.captureScope() != scope) {
            throw new IllegalStateException("cannot " + action + " the capture on " + stream + ": it is over (ended "
                    + "or aborted)");
        }
        if (arena != null || !allocated.isEmpty()) {
            throw new IllegalStateException("cannot " + action + " the capture on " + stream + ": it "
                    + (arena != null ? "takes its allocations from " + arena : "allocated on its stream")
                    + ", and Gatun does not mix graph memory with conditional nodes in one capture; allocate before "
                    + "the capture begins");
        }
        ConditionalCalls.CaptureInfo info = context.calls().conditionals().captureInfo(state.handle());
        if (!info.active()) {
            throw new IllegalStateException("cannot " + action + " the capture on " + stream + ": the driver reports "
                    + "it invalidated (a call it forbids during a capture ran); abort it and capture again");
        }
        if (graph == null) {
            graph = Graph.ofCapture(stream.context(), info.graph(), scope.holds);
        }
        return info;
    }

    /**
     * {@code bytes}, counted in a probe's arena cursor when this capture is one (under the stream's
     * lock): its allocations are the driver's allocation nodes, valid addresses the driver's copy
     * and memset nodes accept, which no launch ever backs, since a probe is aborted.
     */
    private long measured(long bytes) {
        if (cursor != null && !cursor.measure(bytes)) {
            throw overflow(bytes);
        }
        return bytes;
    }

    /** The next {@code bytes} of the arena, or the report of why they do not fit (under the stream's lock). */
    private ArenaBlock fromArena(long bytes) {
        ArenaBlock block = cursor.allocate(bytes);
        if (block == null) {
            throw overflow(bytes);
        }
        return block;
    }

    /** The report of an arena allocation of {@code bytes} that did not fit. */
    private CaptureArenaOverflowException overflow(long bytes) {
        long free;
        try {
            free = stream.context().diagnostics().memoryInfo().freeBytes();
        } catch (RuntimeException e) {
            LOG.debug("Reading the device's free memory for an arena overflow report failed: {}", e.toString());
            free = -1;
        }
        return new CaptureArenaOverflowException(arena.toString(), cursor.neededFor(bytes), arena.mappedBytes(),
                arena.reservedBytes(), free);
    }

    /** {@return the bytes this capture has taken from its arena so far: its peak} */
    long arenaPeakBytes() {
        synchronized (state.lock()) {
            return cursor.peakBytes();
        }
    }

    /** The capture is over: its arena range comes back for the next capture (under the stream's lock). */
    private void closeCursor() {
        if (cursor != null) {
            cursor.close();
        }
    }

    /** The capture is over without a graph: its allocations were never backed, and no free may name them. */
    private void discardAllocations() {
        synchronized (state.lock()) {
            closeCursor();
            scope.allocations.discarded();
        }
    }

    /**
     * Closes the buffers allocated in a capture that made no graph (after {@link
     * #discardAllocations()}): their addresses never held memory, so they are retired without a
     * free, and using them fails as for any closed buffer.
     */
    private void closeAllocations() {
        List<DeviceBuffer> buffers;
        synchronized (state.lock()) {
            buffers = List.copyOf(allocated);
        }
        for (DeviceBuffer b : buffers) {
            b.close();
        }
    }

    /**
     * Abandons the capture: the stream stops capturing, whatever was recorded is destroyed and
     * every hold is dropped. An invalidated capture (the usual reason to abort) is aborted
     * quietly.
     *
     * @throws CudaException when the driver fails to end the capture for another reason; Gatun
     *     has dropped the capture all the same (if the stream still reports a capture, end that
     *     capture before using the stream)
     * @throws IllegalStateException when the capture was already ended or aborted
     */
    public void abort() {
        finish("abort");
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
            LOG.debug("The aborted capture on {} was invalidated; nothing to destroy", stream);
            return;
        } finally {
            exitGate();
            discardAllocations();
            if (body != null) { // what was recorded stays in the body: the graph that owns it keeps holding it
                body.bodyCaptureOver("the capture into " + body + " was aborted, and the part of its work recorded "
                        + "before stays in it (the driver cannot take it back): build the graph again");
            } else {
                scope.holds.releaseAll(); // nothing will be launched from what was recorded
                if (!ended) {
                    captureGraphOver(true); // the driver destroyed it, or endUntracked did
                }
            }
            closeAllocations();
        }
        if (body == null && !captureGraphOver(false)) {
            Graph.discard(stream.context(), partial);
        }
    }

    /** The graph made for this capture's conditional handles and nodes, or null (reads it under the stream's lock). */
    private Graph capturedGraph() {
        synchronized (state.lock()) {
            return body == null ? graph : null;
        }
    }

    /**
     * The capture into a new graph is over without one: when a {@link Graph} was made for it, it is
     * closed (and destroyed, unless {@code destroyedByDriver}: the driver, or {@link #endUntracked},
     * destroyed it already); returns whether one was.
     */
    private boolean captureGraphOver(boolean destroyedByDriver) {
        Graph made = capturedGraph();
        if (made == null) {
            return false;
        }
        made.captureOver(true, destroyedByDriver);
        return true;
    }

    /** Aborts the capture if it is still open; does nothing after {@link #end()} or {@link #abort()}. */
    @Override
    public void close() {
        if (isOpen()) {
            abort();
        }
    }

    private void record(String outcome) {
        if (event != null) {
            event.device = context.device();
            event.stream = stream.toString();
            event.mode = mode.name();
            event.outcome = outcome;
            event.commit();
        }
    }

    private synchronized void finish(String action) {
        if (!open) {
            throw new IllegalStateException("cannot " + action + " the capture on " + stream
                    + ": it was already ended or aborted");
        }
        if (mode != CaptureMode.RELAXED && Thread.currentThread() != beganOn) {
            // The driver would refuse (CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD) and leave the
            // capture running; refused here, the capture stays open for its own thread to end.
            throw new IllegalStateException("cannot " + action + " the " + mode + " capture on " + stream + " from thread '"
                    + Thread.currentThread().getName() + "': it was begun on thread '" + beganOn.getName()
                    + "', and only that thread can end or abort it (capture in RELAXED mode to end it elsewhere)");
        }
        open = false;
    }

    /**
     * Ends the capture on the driver and, under the same hold of the stream's lock, clears its
     * scope: work queued on this stream is either captured and admitted, or queued after the end
     * and not captured; a stream that joined the capture leaves it once the scope is closed.
     */
    private MemorySegment endOnStream() {
        synchronized (state.lock()) {
            try {
                MemorySegment graph = context.calls().graphs().endCapture(state.handle());
                context.captures().ended();
                return graph;
            } catch (RuntimeException e) {
                endUntracked(stream, e, body != null); // a refused end leaves the capture running
                throw e;
            } finally {
                scope.close();
                state.setCaptureScope(null);
                stream.capturing(null);
            }
        }
    }

    /**
     * After a begin or end that failed (call under the stream's lock): if the driver
     * still reports a capture on {@code stream}, which Gatun no longer tracks, ends it and
     * destroys what it recorded. Otherwise the stream would record, not run, all later work
     * queued on it, and could never be closed. What fails here is added to {@code failure}. A
     * capture {@code intoBody} is ended without a destroy: the body belongs to its node.
     */
    private static void endUntracked(Stream stream, RuntimeException failure, boolean intoBody) {
        StreamState s = stream.state();
        try {
            if (s.capturing()) {
                ContextState context = stream.context().state();
                MemorySegment recorded = context.calls().graphs().endCapture(s.handle());
                if (!intoBody) {
                    Graph.discard(stream.context(), recorded);
                }
            }
            if (!s.capturing()) {
                stream.context().state().captures().ended();
            } // else the capture runs on untracked: it stays counted, so every stream keeps asking the driver
        } catch (RuntimeException e) {
            failure.addSuppressed(e);
        }
    }

    private void exitGate() {
        if (ticket != null) {
            context.gate().exitCapture(ticket);
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
                : "and part of its work may be left in " + body + ", so the graph that owns it cannot be instantiated";
        return new CaptureInvalidatedException("the capture on " + stream + " was invalidated before it ended, "
                + outcome + "; " + why, c);
    }

    @Override
    public String toString() {
        return "StreamCapture[" + stream + ", " + mode + (isOpen() ? "]" : ", over]");
    }
}
