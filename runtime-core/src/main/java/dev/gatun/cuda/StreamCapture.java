package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.driver.ConditionalCalls;
import dev.gatun.cuda.internal.graph.CaptureSession;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Objects;
import java.util.Set;

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

    private final Stream stream;
    private final CaptureMode mode;
    private final CaptureSession session;
    /** The conditional node's body this capture records into ({@link Graph#beginCapture}), or null for a new graph. */
    private final Graph body;
    /**
     * The graph being captured into, as a {@link Graph} for its conditional handles and nodes:
     * the body, or for a capture into a new graph the one made when a handle or node first needed
     * it, else null (written under the stream's lock).
     */
    private volatile Graph graph;

    private StreamCapture(Stream stream, CaptureMode mode, CaptureSession session, Graph body) {
        this.stream = stream;
        this.mode = mode;
        this.session = session;
        this.body = body;
        this.graph = body;
    }

    /** See {@link Stream#beginCapture(CaptureMode, Collection)}; {@code only} null admits every buffer. */
    static StreamCapture begin(Stream stream, CaptureMode mode, Collection<? extends DeviceBuffer> only) {
        return begin(stream, mode, only, null);
    }

    /** As {@link #begin(Stream, CaptureMode, Collection)}; allocations from {@code arena} when not null. */
    static StreamCapture begin(Stream stream, CaptureMode mode, Collection<? extends DeviceBuffer> only,
            CaptureSession.ArenaUse arena) {
        Objects.requireNonNull(mode, "mode");
        CaptureSession.checkThread(mode);
        Set<NativeResource> allowed = allowed(stream.context(), only);
        return new StreamCapture(stream, mode,
                CaptureSession.begin(stream.state(), stream.toString(), mode, allowed, arena), null);
    }

    /** See {@link Graph#beginCapture(Stream, CaptureMode)}: {@code body} is a conditional node's body. */
    static StreamCapture intoBody(Stream stream, CaptureMode mode, Graph body) {
        return new StreamCapture(stream, mode,
                CaptureSession.intoBody(stream.state(), stream.toString(), mode, body.builder()), body);
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

    /** {@return the stream being captured} */
    public Stream stream() {
        return stream;
    }

    /** {@return the capture mode it was begun in} */
    public CaptureMode mode() {
        return mode;
    }

    /** {@return whether the capture is still recording (neither ended nor aborted)} */
    public boolean isOpen() {
        return !session.finished();
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
        session.finish("end");
        MemorySegment recorded;
        try {
            recorded = session.end();
        } catch (RuntimeException e) {
            capturedGraphOver(true); // the driver destroyed it: no graph came of the capture
            throw e;
        }
        if (body != null) { // the work is in the body, which its graph holds; the capture made no graph
            return body;
        }
        Graph made = capturedGraph();
        if (made != null) { // a handle or node needed it: the capture allocated nothing and used no arena
            made.state().captureOver(false);
            made.state().unhold(); // the capture's hold
            return made;
        }
        CaptureSession.Ended ended = session.graphOf(recorded);
        List<DeviceBuffer> buffers = new ArrayList<>(ended.allocations().size());
        for (Object b : ended.allocations()) {
            buffers.add((DeviceBuffer) b); // the handles Stream.allocate claimed them with
        }
        return new Graph(stream.context(), ended.graph(), buffers);
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
        synchronized (session.lock()) {
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
        synchronized (session.lock()) {
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
        synchronized (session.lock()) { // the dependencies read are the capture's until the node replaces them
            ConditionalCalls.CaptureInfo info = capturedGraph("add a conditional node to");
            return graph.addConditional(handle, type, bodies, null, info, session);
        }
    }

    /**
     * Under the stream's lock: checks that this capture is open and may hold conditional nodes,
     * reads its graph and dependencies, and makes {@link #graph} the first time.
     */
    private ConditionalCalls.CaptureInfo capturedGraph(String action) {
        ConditionalCalls.CaptureInfo info = session.conditionalInfo(action);
        if (graph == null) {
            graph = new Graph(stream.context(), session.captured(), List.of()); // held by the capture until it is over
        }
        return info;
    }

    /** {@return the bytes this capture has taken from its arena so far: its peak} */
    long arenaPeakBytes() {
        return session.arenaPeakBytes();
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
        session.finish("abort");
        boolean ended = false;
        try {
            ended = session.abort();
        } finally {
            capturedGraphOver(!ended); // not ended: the driver destroyed it, or the failed end did
        }
    }

    /** The graph made for this capture's conditional handles and nodes, or null. */
    private Graph capturedGraph() {
        return body == null ? graph : null;
    }

    /**
     * The capture into a new graph is over without one: when a {@link Graph} was made for it, it is
     * closed (and destroyed, unless {@code destroyedByDriver}: the driver, or the failed end,
     * destroyed it already).
     */
    private void capturedGraphOver(boolean destroyedByDriver) {
        Graph made = capturedGraph();
        if (made != null) {
            made.state().captureOver(destroyedByDriver);
            made.close();
            made.state().unhold(); // the capture's hold, after the close: it is retired now
        }
    }

    /** Aborts the capture if it is still open; does nothing after {@link #end()} or {@link #abort()}. */
    @Override
    public void close() {
        if (isOpen()) {
            abort();
        }
    }

    @Override
    public String toString() {
        return "StreamCapture[" + stream + ", " + mode + (isOpen() ? "]" : ", over]");
    }
}
