package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.DriverTooOldException;
import dev.gatun.cuda.bindings.driver.CUDA_CONDITIONAL_NODE_PARAMS;
import dev.gatun.cuda.bindings.driver.CUgraphEdgeData_st;
import dev.gatun.cuda.bindings.driver.CUgraphNodeParams_st;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * Layer 2, conditional graph nodes: create a conditional handle in a graph, and add an IF, WHILE
 * or SWITCH node whose body graphs the driver creates ({@code cuGraphAddNode_v2} with
 * {@code CUDA_CONDITIONAL_NODE_PARAMS}); inside a stream capture, read the capture's graph and
 * dependencies ({@code cuStreamGetCaptureInfo_v3}), make a node the capture's dependency
 * ({@code cuStreamUpdateCaptureDependencies_v2}) and capture a stream into a body
 * ({@code cuStreamBeginCaptureToGraph}), all CUDA 12.3. Each call names its operation once, owns its
 * out-parameters and checks its result.
 *
 * <p>These came with CUDA 12.3, newer than Gatun's minimum driver (12.0), so each operation checks
 * its feature ({@link DriverFeature#CONDITIONAL_NODES}, {@link DriverFeature#CAPTURED_CONDITIONALS})
 * before its first call; an IF node with two bodies (IF/ELSE) and a SWITCH node need CUDA 12.8
 * ({@link DriverFeature#ELSE_AND_SWITCH}). Cold paths: each makes the context current first, as
 * the other graph-building calls do.
 */
public final class ConditionalCalls {

    /** The node types ({@code CU_GRAPH_COND_TYPE_*}). */
    public static final int IF = CudaDriver.CU_GRAPH_COND_TYPE_IF();
    public static final int WHILE = CudaDriver.CU_GRAPH_COND_TYPE_WHILE();
    public static final int SWITCH = CudaDriver.CU_GRAPH_COND_TYPE_SWITCH();

    private static final String CREATE_HANDLE = "cuGraphConditionalHandleCreate";
    private static final String ADD_NODE = "cuGraphAddNode_v2";
    private static final int NODE_TYPE = CudaDriver.CU_GRAPH_NODE_TYPE_CONDITIONAL();
    private static final int ASSIGN_DEFAULT = CudaDriver.CU_GRAPH_COND_ASSIGN_DEFAULT();
    private static final long PARAMS = CUgraphNodeParams_st.conditional$offset();
    private static final String CAPTURE_INFO = "cuStreamGetCaptureInfo_v3";
    private static final String UPDATE_DEPENDENCIES = "cuStreamUpdateCaptureDependencies_v2";
    private static final String BEGIN_TO_GRAPH = "cuStreamBeginCaptureToGraph";
    private static final int ACTIVE = CudaDriver.CU_STREAM_CAPTURE_STATUS_ACTIVE();
    private static final int SET_DEPENDENCIES = CudaDriver.CU_STREAM_SET_CAPTURE_DEPENDENCIES();

    private final Checked c;

    ConditionalCalls(Checked c) {
        this.c = c;
    }

    /**
     * A new conditional handle of {@code graph} (the graph that will hold its node), for this
     * context.
     *
     * @param assignDefault whether every launch of an executable starts with the handle set to
     *     {@code defaultValue}; otherwise the value stays as the last kernel set it
     * @throws DriverTooOldException before any call, on a driver older than CUDA 12.3
     */
    public long createHandle(MemorySegment graph, int defaultValue, boolean assignDefault) {
        c.require(DriverFeature.CONDITIONAL_NODES);
        c.current(CREATE_HANDLE);
        MemorySegment out = c.out();
        // Safety: graph is live; out receives the 8-byte CUgraphConditionalHandle; the context is
        // this one's, retained for as long as the graph lives; the flags are 0 or ASSIGN_DEFAULT.
        c.check(c.api.cuGraphConditionalHandleCreate(out, graph, c.context(), defaultValue,
                assignDefault ? ASSIGN_DEFAULT : 0), CREATE_HANDLE);
        return out.get(ValueLayout.JAVA_LONG, 0);
    }

    /**
     * The driver version a conditional node of {@code type} with {@code bodies} bodies needs,
     * checked before any call.
     *
     * @throws DriverTooOldException naming that version
     */
    public void requireNode(int type, int bodies) {
        c.require(DriverFeature.CONDITIONAL_NODES);
        if (type == SWITCH || bodies > 1) {
            c.require(DriverFeature.ELSE_AND_SWITCH);
        }
    }

    /** A conditional node just added, and its body graphs in order (owned by the node). */
    public record AddedConditional(MemorySegment node, List<MemorySegment> bodies) {
    }

    /**
     * Adds a conditional node of {@code type} ({@link #IF}, {@link #WHILE}, {@link #SWITCH}) with {@code bodies}
     * body graphs to {@code graph}, after {@code dependencies}. The driver creates the bodies,
     * owned by the node, and returns them in an array of its own: it writes that array's address
     * into the parameters' {@code phGraph_out} (it does not fill an array the caller passes).
     * Call {@link #requireNode} first.
     */
    public AddedConditional addConditional(MemorySegment graph, MemorySegment dependencies, long handle, int type,
            int bodies, Arena arena) {
        return addConditional(graph, dependencies, MemorySegment.NULL, count(dependencies), handle, type, bodies, arena);
    }

    /**
     * As {@link #addConditional(MemorySegment, MemorySegment, long, int, int, Arena)}, after
     * {@code count} dependencies with their edge data ({@code CUgraphEdgeData} array, or NULL for
     * default edges): what {@link #captureInfo} reported of a capture in progress.
     */
    public AddedConditional addConditional(MemorySegment graph, MemorySegment dependencies, MemorySegment edgeData,
            long count, long handle, int type, int bodies, Arena arena) {
        c.current(ADD_NODE);
        MemorySegment params = CUgraphNodeParams_st.allocate(arena); // zeroed: reserved fields must be 0
        CUgraphNodeParams_st.type(params, NODE_TYPE);
        MemorySegment conditional = params.asSlice(PARAMS, CUDA_CONDITIONAL_NODE_PARAMS.sizeof());
        CUDA_CONDITIONAL_NODE_PARAMS.handle(conditional, handle);
        CUDA_CONDITIONAL_NODE_PARAMS.type(conditional, type);
        CUDA_CONDITIONAL_NODE_PARAMS.size(conditional, bodies);
        CUDA_CONDITIONAL_NODE_PARAMS.ctx(conditional, c.context());
        MemorySegment out = c.out();
        // Safety: graph is live; dependencies holds count live nodes of it, and edgeData count
        // edge descriptions or NULL (default edges); both are the caller's arrays, or the
        // driver's own from captureInfo, valid until the next call on the capturing stream;
        // handle was created in this graph or an ancestor's body chain by this context; params
        // lives in the caller's arena for the call, and the driver writes phGraph_out in it;
        // out receives the node handle.
        c.check(c.api.cuGraphAddNode_v2(out, graph, dependencies, edgeData, count, params), ADD_NODE);
        MemorySegment node = MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
        // Safety: on success the driver set phGraph_out to its array of `bodies` CUgraph
        // handles, valid as long as the node; they are copied out here.
        MemorySegment graphs = CUDA_CONDITIONAL_NODE_PARAMS.phGraph_out(conditional)
                .reinterpret(bodies * ValueLayout.ADDRESS.byteSize());
        List<MemorySegment> created = new ArrayList<>(bodies);
        for (int i = 0; i < bodies; i++) {
            created.add(graphs.getAtIndex(ValueLayout.ADDRESS, i));
        }
        return new AddedConditional(node, List.copyOf(created));
    }

    /**
     * What {@code cuStreamGetCaptureInfo_v3} reports of a capture in progress: whether it is still
     * active (not invalidated), the graph it records into, and the dependency set the next node
     * captured on the stream would get (its nodes and their edge data, in arrays of the driver's
     * own, valid until the next call on the stream, or NULL when there are none).
     */
    public record CaptureInfo(boolean active, MemorySegment graph, MemorySegment dependencies, MemorySegment edgeData,
            long count) {
    }

    /**
     * The capture in progress on {@code stream}, a live stream of this context that Gatun began
     * capturing (call under the stream's lock, so no work is captured between this and the use of
     * its dependencies).
     *
     * @throws DriverTooOldException before any call, on a driver older than CUDA 12.3
     */
    public CaptureInfo captureInfo(MemorySegment stream) {
        c.require(DriverFeature.CAPTURED_CONDITIONALS);
        c.current(CAPTURE_INFO);
        MemorySegment out = c.out();
        // out holds, 8 bytes apart: the status (an int), the graph, the dependency array's
        // address, the edge data array's address and the count; the id is not asked for.
        MemorySegment status = out.asSlice(0, 8);
        MemorySegment graph = out.asSlice(8, 8);
        MemorySegment deps = out.asSlice(16, 8);
        MemorySegment edges = out.asSlice(24, 8);
        MemorySegment count = out.asSlice(32, 8);
        graph.set(ValueLayout.JAVA_LONG, 0, 0);
        deps.set(ValueLayout.JAVA_LONG, 0, 0);
        edges.set(ValueLayout.JAVA_LONG, 0, 0);
        count.set(ValueLayout.JAVA_LONG, 0, 0);
        // Safety: stream is live and of this context; each out-parameter is 8 bytes of this
        // thread's out block; asking for the edge data too means the driver never answers
        // CUDA_ERROR_LOSSY_QUERY; the arrays it points to are its own.
        c.check(c.api.cuStreamGetCaptureInfo_v3(stream, status, MemorySegment.NULL, graph, deps, edges, count),
                CAPTURE_INFO);
        long n = count.get(ValueLayout.JAVA_LONG, 0);
        // Safety: the driver's arrays hold n node handles and n CUgraphEdgeData; read only
        // through the sizes it reported.
        MemorySegment nodes = n == 0 ? MemorySegment.NULL
                : MemorySegment.ofAddress(deps.get(ValueLayout.JAVA_LONG, 0)).reinterpret(n * ValueLayout.ADDRESS.byteSize());
        long edgeAddress = edges.get(ValueLayout.JAVA_LONG, 0);
        MemorySegment edgeData = n == 0 || edgeAddress == 0 ? MemorySegment.NULL
                : MemorySegment.ofAddress(edgeAddress).reinterpret(n * CUgraphEdgeData_st.sizeof());
        return new CaptureInfo(status.get(ValueLayout.JAVA_INT, 0) == ACTIVE,
                MemorySegment.ofAddress(graph.get(ValueLayout.JAVA_LONG, 0)), nodes, edgeData, n);
    }

    /**
     * Makes {@code node}, a node just added to the graph {@code stream} captures into, the only
     * dependency of the next work captured on it ({@code CU_STREAM_SET_CAPTURE_DEPENDENCIES}).
     */
    public void setCaptureDependency(MemorySegment stream, MemorySegment node) {
        c.current(UPDATE_DEPENDENCIES);
        MemorySegment nodes = c.out();
        nodes.set(ValueLayout.ADDRESS, 0, node);
        // Safety: stream is live and capturing; nodes holds one live node of its capture's
        // graph; NULL edge data: a default edge.
        c.check(c.api.cuStreamUpdateCaptureDependencies_v2(stream, nodes, MemorySegment.NULL, 1, SET_DEPENDENCIES),
                UPDATE_DEPENDENCIES);
    }

    /**
     * Begins capturing {@code stream} into {@code graph}, an existing graph (a conditional node's
     * body), with no dependencies: the first node captured is a root of it.
     *
     * @param mode one of GraphCalls' {@code MODE_*} constants
     * @throws DriverTooOldException before any call, on a driver older than CUDA 12.3
     */
    public void beginCaptureToGraph(MemorySegment stream, MemorySegment graph, int mode) {
        c.require(DriverFeature.CAPTURED_CONDITIONALS);
        c.current(BEGIN_TO_GRAPH);
        // Safety: stream is live, of this context and not capturing, and the caller holds its
        // lock; graph is a live body of a conditional node of this context; no dependencies.
        c.check(c.api.cuStreamBeginCaptureToGraph(stream, graph, MemorySegment.NULL, MemorySegment.NULL, 0, mode),
                BEGIN_TO_GRAPH);
    }

    private static long count(MemorySegment nodes) {
        return nodes.byteSize() / ValueLayout.ADDRESS.byteSize();
    }
}
