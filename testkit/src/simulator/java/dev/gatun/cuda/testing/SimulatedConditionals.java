package dev.gatun.cuda.testing;

import static dev.gatun.cuda.testing.FakeDriverApi.INVALID_HANDLE;
import static dev.gatun.cuda.testing.FakeDriverApi.INVALID_VALUE;
import static dev.gatun.cuda.testing.FakeDriverApi.SUCCESS;

import dev.gatun.cuda.bindings.driver.CUDA_CONDITIONAL_NODE_PARAMS;
import dev.gatun.cuda.bindings.driver.CUgraphNodeParams_st;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The simulated driver's conditional graph nodes: conditional handles, IF, WHILE and SWITCH nodes
 * and their body graphs (graphs of {@link SimulatedCaptureAndGraphs}, created empty with the
 * node and owned by it). A simulated kernel sets a handle's value with
 * {@link FakeKernel.Launch#setConditional}. An executable runs a conditional node as one
 * operation that, when its stream runs it, reads the handle's value and runs the operations of
 * the chosen body (as instantiated) inline, in their launch order; a WHILE node runs its body
 * again while the value is not 0. A launch first assigns their defaults to the handles that ask
 * for it. As the driver, instantiation refuses a body without nodes and an unused handle.
 */
final class SimulatedConditionals {

    /** A WHILE node that ran its body this often is taken for a loop its kernels never end. */
    static final int MAX_ITERATIONS = 10_000;

    /** A conditional handle: the graph it was created in, its default and whether launches assign it. */
    private record Handle(long graph, int defaultValue, boolean assignDefault) {
    }

    /** What a conditional node of a graph is: its handle, its type and its body graphs. */
    record Node(long handle, int type, long[] bodies) {
    }

    private final FakeDriverApi gpu;
    private final Map<Long, Handle> handles = new HashMap<>();
    /** Each handle's value as the kernels (or a launch's default) set it last; absent until then. */
    private final Map<Long, Integer> values = new HashMap<>();
    /** Each body graph, with the graph that holds its node. */
    private final Map<Long, Long> bodyParents = new HashMap<>();
    /** Handles some conditional node uses. */
    private final Set<Long> used = new HashSet<>();

    SimulatedConditionals(FakeDriverApi gpu) {
        this.gpu = gpu;
    }

    public int cuGraphConditionalHandleCreate(MemorySegment handle, MemorySegment graph, MemorySegment context,
            int defaultValue, int flags) {
        if (!gpu.graphs.graphs.containsKey(graph.address())) {
            return INVALID_HANDLE;
        }
        int assign = CudaDriver.CU_GRAPH_COND_ASSIGN_DEFAULT();
        if (context.address() == 0 || (flags != 0 && flags != assign)) {
            return INVALID_VALUE;
        }
        long h = gpu.newHandle();
        handles.put(h, new Handle(graph.address(), defaultValue, flags == assign));
        handle.reinterpret(8).set(ValueLayout.JAVA_LONG, 0, h);
        return SUCCESS;
    }

    /** Only conditional nodes: Gatun adds every other kind with its own function. */
    public int cuGraphAddNode_v2(MemorySegment node, MemorySegment graph, MemorySegment deps, MemorySegment edgeData,
            long count, MemorySegment params) {
        MemorySegment p = params.reinterpret(CUgraphNodeParams_st.sizeof());
        if (CUgraphNodeParams_st.type(p) != CudaDriver.CU_GRAPH_NODE_TYPE_CONDITIONAL()
                || !SimulatedCaptureGraphs.defaultEdges(edgeData, count)) {
            return INVALID_VALUE;
        }
        MemorySegment c = CUgraphNodeParams_st.conditional(p);
        long handle = CUDA_CONDITIONAL_NODE_PARAMS.handle(c);
        int type = CUDA_CONDITIONAL_NODE_PARAMS.type(c);
        int size = CUDA_CONDITIONAL_NODE_PARAMS.size(c);
        Handle h = handles.get(handle);
        if (!gpu.graphs.graphs.containsKey(graph.address())) {
            return INVALID_HANDLE;
        }
        if (h == null || !within(graph.address(), h.graph()) || !validSize(type, size)
                || CUDA_CONDITIONAL_NODE_PARAMS.ctx(c).address() == 0) {
            return INVALID_VALUE;
        }
        Node conditional = new Node(handle, type, new long[size]);
        StreamOp op = new StreamOp(() -> gpu.violations.add("a conditional node ran without being instantiated"),
                Set.of(), Set.of());
        op.conditional = conditional;
        op.kind = "CONDITIONAL";
        int r = gpu.graphs.addNode(node, graph, deps, count, op);
        if (r != SUCCESS) {
            return r;
        }
        gpu.captureGraphs.conditionalAdded(graph.address(), gpu.graphs.positions(graph.address(), deps, count));
        // As the driver: the body handles go into an array of the driver's own (kept as long as
        // the simulation), whose address replaces phGraph_out in the caller's parameters; an
        // array the caller put there is left untouched.
        MemorySegment out = Arena.global().allocate(ValueLayout.JAVA_LONG, size);
        for (int i = 0; i < size; i++) {
            conditional.bodies()[i] = gpu.graphs.createEmpty();
            bodyParents.put(conditional.bodies()[i], graph.address());
            out.setAtIndex(ValueLayout.JAVA_LONG, i, conditional.bodies()[i]);
        }
        CUDA_CONDITIONAL_NODE_PARAMS.phGraph_out(c, out);
        used.add(handle);
        return SUCCESS;
    }

    private static boolean validSize(int type, int size) {
        if (type == CudaDriver.CU_GRAPH_COND_TYPE_IF()) {
            return size == 1 || size == 2;
        }
        if (type == CudaDriver.CU_GRAPH_COND_TYPE_WHILE()) {
            return size == 1;
        }
        return type == CudaDriver.CU_GRAPH_COND_TYPE_SWITCH() && size >= 1;
    }

    /** Whether {@code graph} is {@code ancestor} or a body inside it. */
    boolean within(long graph, long ancestor) {
        for (Long g = graph; g != null; g = bodyParents.get(g)) {
            if (g == ancestor) {
                return true;
            }
        }
        return false;
    }

    /** Sets a handle's value, as {@code cudaGraphSetConditional} does in a kernel. */
    void set(long handle, int value) {
        if (!handles.containsKey(handle)) {
            gpu.violations.add("a kernel set conditional handle 0x" + Long.toHexString(handle) + ", which no graph has");
            return;
        }
        values.put(handle, value);
    }

    boolean isBody(long graph) {
        return bodyParents.containsKey(graph);
    }

    /**
     * Why {@code graph} cannot be instantiated (a body without nodes, a handle no node uses, a
     * body itself), or null.
     */
    String refusal(long graph) {
        if (isBody(graph)) {
            return "a body graph instantiated on its own";
        }
        for (Map.Entry<Long, Long> b : bodyParents.entrySet()) {
            if (within(b.getKey(), graph) && gpu.graphs.graphs.get(b.getKey()).isEmpty()) {
                return "a conditional body without nodes";
            }
        }
        for (Map.Entry<Long, Handle> h : handles.entrySet()) {
            if (within(h.getValue().graph(), graph) && !used.contains(h.getKey())) {
                return "a conditional handle no node uses";
            }
        }
        return null;
    }

    /** The operations of {@code graph} as an executable runs them: each conditional node one operation. */
    List<StreamOp> resolved(List<StreamOp> ops) {
        List<StreamOp> out = new ArrayList<>(ops.size());
        for (StreamOp op : ops) {
            out.add(op.conditional == null ? op : run(op.conditional));
        }
        return List.copyOf(out);
    }

    /** The operation that runs a conditional node over its bodies as they are now. */
    private StreamOp run(Node node) {
        List<List<StreamOp>> bodies = new ArrayList<>();
        Set<Long> deviceUses = new HashSet<>();
        Set<Long> hostUses = new HashSet<>();
        for (long body : node.bodies()) {
            List<StreamOp> ops = resolved(gpu.graphs.graphs.get(body));
            List<StreamOp> ordered = new ArrayList<>();
            for (int i : gpu.graphs.launchOrder(body)) {
                ordered.add(ops.get(i));
                deviceUses.addAll(ops.get(i).deviceUses);
                hostUses.addAll(ops.get(i).hostUses);
            }
            bodies.add(ordered);
        }
        StreamOp op = new StreamOp(() -> choose(node, bodies), deviceUses, hostUses);
        op.kind = "CONDITIONAL";
        return op;
    }

    private void choose(Node node, List<List<StreamOp>> bodies) {
        if (node.type() == CudaDriver.CU_GRAPH_COND_TYPE_WHILE()) {
            for (int n = 0; value(node.handle()) != 0; n++) {
                if (n == MAX_ITERATIONS) {
                    gpu.violations.add("a WHILE node ran its body " + MAX_ITERATIONS + " times: no kernel ended the loop");
                    return;
                }
                runAll(bodies.get(0));
            }
        } else if (node.type() == CudaDriver.CU_GRAPH_COND_TYPE_IF()) {
            if (value(node.handle()) != 0) {
                runAll(bodies.get(0));
            } else if (bodies.size() == 2) {
                runAll(bodies.get(1));
            }
        } else {
            int v = value(node.handle());
            if (Integer.compareUnsigned(v, bodies.size()) < 0) {
                runAll(bodies.get(v));
            }
        }
    }

    private static void runAll(List<StreamOp> ops) {
        for (StreamOp op : ops) {
            op.action.run();
        }
    }

    private int value(long handle) {
        Integer v = values.get(handle);
        if (v == null) {
            gpu.violations.add("a conditional node read handle 0x" + Long.toHexString(handle)
                    + " before a kernel or a launch default set it");
            return 0;
        }
        return v;
    }

    /** What a launch of an executable of {@code graph} does first: assign the defaults its handles ask for. */
    Runnable defaultsOf(long graph) {
        Map<Long, Integer> defaults = new HashMap<>();
        handles.forEach((h, handle) -> {
            if (handle.assignDefault() && within(handle.graph(), graph)) {
                defaults.put(h, handle.defaultValue());
            }
        });
        return defaults.isEmpty() ? null : () -> values.putAll(defaults);
    }

    /** Forgets {@code graph}'s bodies (destroyed with it) and the handles of all of them; returns the bodies. */
    List<Long> destroyed(long graph) {
        List<Long> inside = new ArrayList<>();
        for (Long b : bodyParents.keySet()) {
            if (b != graph && within(b, graph)) {
                inside.add(b);
            }
        }
        List<Long> gone = handles.entrySet().stream().filter(h -> within(h.getValue().graph(), graph))
                .map(Map.Entry::getKey).toList();
        for (long h : gone) {
            handles.remove(h);
            values.remove(h);
            used.remove(h);
        }
        inside.forEach(bodyParents::remove);
        return inside;
    }
}
