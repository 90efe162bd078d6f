package dev.gatun.cuda.internal.graph;

import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.bindings.driver.CUDA_KERNEL_NODE_PARAMS_v2_st;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.driver.GraphBuildCalls;
import dev.gatun.cuda.internal.driver.GraphCalls;
import dev.gatun.cuda.internal.launch.KernelNodes;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Changes to an executable: a whole-graph update in place ({@code cuGraphExecUpdate}) with the
 * explanation of a refusal, and the node updates. Each holds what the executable will name
 * before the driver can use it, and runs under the executable's lock, which its launches take
 * too. See the package's invariants.
 */
public final class ExecUpdates {

    private static final Logger LOG = LoggerFactory.getLogger(ExecUpdates.class);

    /** The driver's {@code CUgraphExecUpdateResult} codes, as the public result names them. */
    public static final int UPDATE_SUCCESS = CudaDriver.CU_GRAPH_EXEC_UPDATE_SUCCESS();
    public static final int UPDATE_ERROR = CudaDriver.CU_GRAPH_EXEC_UPDATE_ERROR();
    public static final int TOPOLOGY_CHANGED = CudaDriver.CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED();
    public static final int NODE_TYPE_CHANGED = CudaDriver.CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED();
    public static final int FUNCTION_CHANGED = CudaDriver.CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED();
    public static final int PARAMETERS_CHANGED = CudaDriver.CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED();
    public static final int NOT_SUPPORTED = CudaDriver.CU_GRAPH_EXEC_UPDATE_ERROR_NOT_SUPPORTED();
    public static final int UNSUPPORTED_FUNCTION_CHANGE =
            CudaDriver.CU_GRAPH_EXEC_UPDATE_ERROR_UNSUPPORTED_FUNCTION_CHANGE();
    public static final int ATTRIBUTES_CHANGED = CudaDriver.CU_GRAPH_EXEC_UPDATE_ERROR_ATTRIBUTES_CHANGED();

    /**
     * What an update came to: the driver's result and, for a refusal, the nodes it blamed in
     * words (null where it named none); or one of Gatun's refusals, {@link #MEMORY_NODES} and
     * {@link #ARENA_CHANGED}, made before any driver call.
     */
    public record Outcome(int result, String errorNode, String errorFromNode) {
    }

    /** Refused: one of the graphs has memory nodes, whose allocations have addresses of their own. */
    public static final Outcome MEMORY_NODES = new Outcome(UPDATE_ERROR, null, null);
    /** Refused: the graphs were captured into different capture arenas (or one into none). */
    public static final Outcome ARENA_CHANGED = new Outcome(UPDATE_ERROR, null, null);
    private static final Outcome APPLIED = new Outcome(UPDATE_SUCCESS, null, null);

    private ExecUpdates() {
    }

    /**
     * {@return the graph of {@code next}, checked for an update: not a body, open, and without what
     * instantiation refuses (the driver's update would refuse it too)}
     */
    public static GraphState updatable(NodeBuilder next) {
        if (next.isBody()) {
            throw new IllegalArgumentException(next.name() + " is a conditional node's body, which runs only as part "
                    + "of the graph that holds the node; update to that graph");
        }
        GraphState graph = next.graph();
        graph.checkOpen();
        graph.checkInstantiable();
        return graph;
    }

    /**
     * Updates {@code exec} in place so that later launches run {@code next} (checked with
     * {@link #updatable}); on success it holds what {@code next} holds, and {@code next}
     * itself until it runs another graph. When the driver fails, the update may have been
     * applied, so {@code exec} then holds what both graphs hold.
     */
    public static Outcome update(ExecState exec, GraphState next) {
        // Memory nodes: each graph's allocations have addresses of their own; no driver call.
        if (exec.memory != null || next.memory != null) {
            return MEMORY_NODES;
        }
        if (exec.arena != next.arena) {
            return ARENA_CHANGED;
        }
        GraphCalls.UpdateOutcome outcome = updateLocked(exec, next);
        if (outcome.result() == UPDATE_SUCCESS) {
            return APPLIED;
        }
        return new Outcome(outcome.result(), describe(exec, outcome.errorNode(), next, "the new graph"),
                describe(exec, outcome.errorFromNode(), exec.origin, "the executable's graph"));
    }

    private static GraphCalls.UpdateOutcome updateLocked(ExecState exec, GraphState next) {
        next.hold();
        GraphState released = next; // the hold dropped after the lock (a drop may retire, which takes stream locks)
        try {
            synchronized (exec.lock) {
                GraphCalls.UpdateOutcome result;
                try {
                    result = exec.calls.update(exec.handle, next.handle);
                } catch (RuntimeException e) {
                    // The driver may have applied the update before it failed (the outcome is
                    // uncertain): later launches may run either graph's kernels and addresses, so
                    // this executable holds the buffers and modules of both until it is destroyed.
                    exec.holds.addAll(next.holds);
                    throw e;
                }
                if (result.result() != UPDATE_SUCCESS) {
                    return result;
                }
                exec.holds.addAll(next.holds); // it now runs that graph's kernels and addresses
                released = exec.current; // launches before the update ran it; this executable holds what it baked in
                exec.current = next;
                return result;
            }
        } finally {
            released.unhold();
        }
    }

    /**
     * {@code node} (null handle: none) of {@code graph} in words: its type and position in the
     * graph's node list. A refusal is cold: two driver queries do not matter, and a failure of
     * theirs leaves the result as the driver gave it, with the node described by its handle.
     */
    private static String describe(ExecState exec, MemorySegment node, GraphState graph, String which) {
        if (node.address() == 0) {
            return null;
        }
        try (Arena arena = Arena.ofConfined()) {
            int driverType = exec.calls.nodeType(node);
            NodeKind kind = NodeKind.ofDriverType(driverType);
            String type = kind == null ? "type-" + driverType : kind.name().toLowerCase(Locale.ROOT).replace('_', ' ');
            MemorySegment nodes;
            synchronized (graph.building) { // no node is added while the list is read
                nodes = exec.calls.nodes(graph.handle, arena);
            }
            for (long i = 0; i < nodes.byteSize() / 8; i++) {
                if (nodes.getAtIndex(ValueLayout.JAVA_LONG, i) == node.address()) {
                    return type + " node " + i + " of " + which + " (" + graph.identity() + ")";
                }
            }
            return type + " node of " + which + " (" + graph.identity() + ")";
        } catch (CudaException e) {
            LOG.debug("Describing the node an update was refused at failed: {}", e.toString());
            return "node 0x" + Long.toHexString(node.address()) + " of " + which;
        }
    }

    /**
     * Points the {@code occurrence}-th kernel node (0-based, in the driver's node order) that
     * launches {@code function} at the argument block {@code kernelParams}, keeping the grid,
     * block and shared memory of the graph {@code exec} runs now; {@code exec} then holds
     * {@code owners}, the buffers the arguments name.
     *
     * @throws IllegalArgumentException when no such node exists
     */
    public static void updateKernelNode(ExecState exec, int occurrence, MemorySegment function, String kernelName,
            MemorySegment kernelParams, List<NativeResource> owners) {
        synchronized (exec.lock) {
            exec.checkOpen();
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment params = CUDA_KERNEL_NODE_PARAMS_v2_st.allocate(arena);
                MemorySegment node = KernelNodes.find(exec.calls, exec.current.handle, exec.origin.handle, function,
                        occurrence, params, arena, kernelName);
                CUDA_KERNEL_NODE_PARAMS_v2_st.kernelParams(params, kernelParams);
                CUDA_KERNEL_NODE_PARAMS_v2_st.extra(params, MemorySegment.NULL);
                exec.holds.addAll(owners); // before the node can use them
                exec.calls.setKernelNodeParams(exec.handle, node, params);
            }
        }
    }

    /**
     * Checks that {@code exec} is open and has {@code node}: a node of the root graph it was
     * instantiated from, not removed, added before it was instantiated.
     */
    public static void checkOwnNode(ExecState exec, Node node) {
        exec.checkOpen();
        if (node.graph().isBody()) {
            throw new IllegalArgumentException(node + " is in " + node.graph().name() + "; nodes of conditional bodies "
                    + "cannot be changed one by one in an executable: change the body and instantiate again");
        }
        if (node.graph().graph() != exec.origin) {
            throw new IllegalArgumentException(node + " is not a node of the graph this executable was instantiated "
                    + "from; pass a node of that graph");
        }
        if (node.isRemoved()) {
            throw new IllegalArgumentException(node + " was removed from its graph; this executable still runs its copy, "
                    + "but the driver addresses it only through the graph's node: instantiate the graph again");
        }
        if (node.index() >= exec.nodes) {
            throw new IllegalArgumentException(node + " was added after this executable was instantiated, so it has "
                    + "no such node; instantiate the graph again");
        }
    }

    /** Enables or disables {@code node} (checked with {@link #checkOwnNode}) for the launches made after this call. */
    public static void setEnabled(ExecState exec, Node node, boolean enabled) {
        synchronized (exec.lock) {
            exec.checkOpen();
            building(exec).setEnabled(exec.handle, node.handle(), enabled);
        }
    }

    /**
     * Sets kernel node {@code node} (checked) to launch {@code function} with {@code config} and a
     * copy of {@code kernelParams}; {@code exec} then holds the module and the buffers.
     */
    public static void setKernelNode(ExecState exec, Node node, MemorySegment function, LaunchConfig config,
            MemorySegment kernelParams, NativeResource module, List<NativeResource> buffers) {
        synchronized (exec.lock) {
            exec.checkOpen();
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment params = KernelNodes.params(function, config, kernelParams, arena);
                exec.holds.add(module); // before the node can use them
                exec.holds.addAll(buffers);
                exec.calls.setKernelNodeParams(exec.handle, node.handle(), params);
            }
        }
    }

    /** Sets event record or wait node {@code node} (checked) to {@code eventHandle}; {@code exec} then holds {@code event}. */
    public static void setEvent(ExecState exec, Node node, NativeResource event, MemorySegment eventHandle) {
        synchronized (exec.lock) {
            exec.checkOpen();
            exec.holds.add(event); // before the node can name it
            if (node.kind() == NodeKind.EVENT_RECORD) {
                building(exec).setRecordEvent(exec.handle, node.handle(), eventHandle);
            } else {
                building(exec).setWaitEvent(exec.handle, node.handle(), eventHandle);
            }
        }
    }

    private static GraphBuildCalls building(ExecState exec) {
        return exec.context().calls().graphBuilding();
    }
}
