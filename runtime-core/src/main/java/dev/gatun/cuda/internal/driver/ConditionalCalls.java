package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.DriverTooOldException;
import dev.gatun.cuda.bindings.driver.CUDA_CONDITIONAL_NODE_PARAMS;
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
 * {@code CUDA_CONDITIONAL_NODE_PARAMS}). Each call names its operation once, owns its
 * out-parameters and checks its result.
 *
 * <p>Both functions came with CUDA 12.3, newer than Gatun's minimum driver (12.0), so each call
 * checks the driver's version (and that it exports the function) before it is made; an IF node
 * with two bodies (IF/ELSE) and a SWITCH node need CUDA 12.8. Cold paths: each makes the
 * context current first, as the other graph-building calls do.
 */
public final class ConditionalCalls {

    /** The CUDA version of conditional handles and of IF and WHILE nodes with one body. */
    public static final int CONDITIONAL_NODES = 12030;
    /** The CUDA version of IF nodes with an ELSE body and of SWITCH nodes. */
    public static final int ELSE_AND_SWITCH = 12080;

    /** The node types ({@code CU_GRAPH_COND_TYPE_*}). */
    public static final int IF = CudaDriver.CU_GRAPH_COND_TYPE_IF();
    public static final int WHILE = CudaDriver.CU_GRAPH_COND_TYPE_WHILE();
    public static final int SWITCH = CudaDriver.CU_GRAPH_COND_TYPE_SWITCH();

    private static final String CREATE_HANDLE = "cuGraphConditionalHandleCreate";
    private static final String ADD_NODE = "cuGraphAddNode_v2";
    private static final int NODE_TYPE = CudaDriver.CU_GRAPH_NODE_TYPE_CONDITIONAL();
    private static final int ASSIGN_DEFAULT = CudaDriver.CU_GRAPH_COND_ASSIGN_DEFAULT();
    private static final long PARAMS = CUgraphNodeParams_st.conditional$offset();

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
        c.require(CREATE_HANDLE, CONDITIONAL_NODES);
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
        c.require(ADD_NODE, CONDITIONAL_NODES);
        boolean newer = type == SWITCH || bodies > 1;
        int installed = c.driver().version().encoded();
        if (newer && installed < ELSE_AND_SWITCH) {
            throw new DriverTooOldException(ADD_NODE, ELSE_AND_SWITCH, installed,
                    "an IF node with an ELSE body, and a SWITCH node, came with CUDA 12.8");
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
        c.current(ADD_NODE);
        MemorySegment params = CUgraphNodeParams_st.allocate(arena); // zeroed: reserved fields must be 0
        CUgraphNodeParams_st.type(params, NODE_TYPE);
        MemorySegment conditional = params.asSlice(PARAMS, CUDA_CONDITIONAL_NODE_PARAMS.sizeof());
        CUDA_CONDITIONAL_NODE_PARAMS.handle(conditional, handle);
        CUDA_CONDITIONAL_NODE_PARAMS.type(conditional, type);
        CUDA_CONDITIONAL_NODE_PARAMS.size(conditional, bodies);
        CUDA_CONDITIONAL_NODE_PARAMS.ctx(conditional, c.context());
        MemorySegment out = c.out();
        // Safety: graph is live; dependencies holds count live nodes of it and no edge data
        // (NULL: default edges); handle was created in this graph or an ancestor's body chain
        // by this context; params lives in the caller's arena for the call, and the driver
        // writes phGraph_out in it; out receives the node handle.
        c.check(c.api.cuGraphAddNode_v2(out, graph, dependencies, MemorySegment.NULL, count(dependencies), params),
                ADD_NODE);
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

    private static long count(MemorySegment nodes) {
        return nodes.byteSize() / ValueLayout.ADDRESS.byteSize();
    }
}
