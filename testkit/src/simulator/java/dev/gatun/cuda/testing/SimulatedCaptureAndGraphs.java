package dev.gatun.cuda.testing;

import static dev.gatun.cuda.testing.FakeDriverApi.INVALID_HANDLE;
import static dev.gatun.cuda.testing.FakeDriverApi.INVALID_VALUE;
import static dev.gatun.cuda.testing.FakeDriverApi.SUCCESS;

import dev.gatun.cuda.bindings.driver.CUDA_HOST_NODE_PARAMS_st;
import dev.gatun.cuda.bindings.driver.CUDA_KERNEL_NODE_PARAMS_v2_st;
import dev.gatun.cuda.bindings.driver.CUDA_MEMCPY3D_st;
import dev.gatun.cuda.bindings.driver.CUDA_MEMSET_NODE_PARAMS_st;
import dev.gatun.cuda.bindings.driver.CUgraphEdgeData_st;
import dev.gatun.cuda.bindings.driver.CUhostFn;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The simulated driver's stream capture, graphs and graph executables. A capture records the
 * operations submitted to its stream instead of running them, each as a node of the capture's
 * graph after the capture's dependencies ({@link SimulatedCaptureGraphs}: on one stream, each
 * after the one before). A graph built node by node lists its nodes
 * in the order they were added, each with the dependencies it was given. An executable runs
 * its nodes in an order its dependencies allow that is as far from the order they were added in
 * as possible (of the nodes ready, the last added first), so that a missing dependency shows;
 * a replay queues copies of the enabled ones on the launch stream, in that order. An event node
 * queues, at each replay, a record of its event or a wait for the event's last record then. Conditional nodes and their bodies are
 * {@link SimulatedConditionals}'.
 */
final class SimulatedCaptureAndGraphs {

    private record NodeRef(long graph, int index) {
    }

    /** The kinds (DOT labels) of event record and event wait nodes. */
    private static final String RECORD = "EVENT_RECORD";
    private static final String WAIT = "WAIT_EVENT";
    /** The kinds of host nodes (also a host function captured from a stream), child graph nodes and removed nodes. */
    static final String HOST = "HOST";
    private static final String CHILD = "CHILD_GRAPH";
    private static final String REMOVED = "REMOVED";

    private final FakeDriverApi gpu;
    final Map<Long, List<StreamOp>> graphs = new HashMap<>();
    final Map<Long, List<StreamOp>> execs = new HashMap<>();
    int graphLaunches;
    /** Node handles of every graph ever captured, in capture order (cuGraphGetNodes' order). */
    private final Map<Long, long[]> graphNodes = new HashMap<>();
    /** Which graph, and which position in it, each node handle names. */
    private final Map<Long, NodeRef> nodes = new HashMap<>();
    /** The graph each live executable was instantiated from: the driver names its nodes by that graph's. */
    private final Map<Long, Long> execOrigins = new HashMap<>();
    /** Per graph, per node (by position), the positions of the nodes it depends on. */
    private final Map<Long, List<int[]>> dependencies = new HashMap<>();
    /** Per executable, the positions of its nodes in the order a launch runs them. */
    private final Map<Long, int[]> execOrders = new HashMap<>();
    /** Per executable, the positions of its disabled nodes. */
    private final Map<Long, Set<Integer>> disabled = new HashMap<>();
    /** Per executable with conditional handles to reset, what each launch does first. */
    private final Map<Long, Runnable> launchDefaults = new HashMap<>();
    /** Every programmatic edge added by hand: producer position, consumer position, port. */
    final List<int[]> programmaticEdges = new ArrayList<>();
    /** Executables instantiated with CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH. */
    private final Set<Long> autoFree = new HashSet<>();

    SimulatedCaptureAndGraphs(FakeDriverApi gpu) {
        this.gpu = gpu;
    }

    // ---- capture ----

    public int cuStreamBeginCapture_v2(MemorySegment stream, int mode) {
        SimulatedStreams.Stream s = gpu.streams.stream(stream.address());
        if (s == null) {
            return INVALID_HANDLE;
        }
        if (s.captured != null) {
            return CudaDriver.CUDA_ERROR_ILLEGAL_STATE();
        }
        s.captured = new ArrayList<>();
        s.captureStatus = CudaDriver.CU_STREAM_CAPTURE_STATUS_ACTIVE();
        s.captureCarrier = gpu.contexts.captureOwner(mode);
        s.globalCapture = mode == CudaDriver.CU_STREAM_CAPTURE_MODE_GLOBAL();
        gpu.captureGraphs.begun(s.captured, createEmpty(), false, new int[0]);
        return SUCCESS;
    }

    public int cuStreamEndCapture(MemorySegment stream, MemorySegment graph) {
        SimulatedStreams.Stream s = gpu.streams.stream(stream.address());
        if (s == null || s.captured == null) {
            return s == null ? INVALID_HANDLE : CudaDriver.CUDA_ERROR_ILLEGAL_STATE();
        }
        if (s.joinedTo != null) {
            return CudaDriver.CUDA_ERROR_STREAM_CAPTURE_UNMATCHED(); // it joined a capture begun elsewhere
        }
        if (s.captureCarrier != null && s.captureCarrier != gpu.contexts.carrier()) {
            // A global or thread-local capture belongs to the OS thread that began it; the
            // capture goes on, for that thread to end.
            gpu.logs.refused("cuStreamEndCapture", "the capture was begun on thread '" + s.captureCarrier.getName()
                    + "' in a mode other than relaxed, and only that thread may end it");
            return CudaDriver.CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD();
        }
        s.captureCarrier = null;
        s.globalCapture = false;
        boolean unjoined = gpu.streams.leaveCapture(s);
        SimulatedCaptureGraphs.Capture capture = gpu.captureGraphs.ended(s.captured);
        if (s.captureStatus == CudaDriver.CU_STREAM_CAPTURE_STATUS_INVALIDATED() || unjoined) {
            s.captured = null;
            s.captureStatus = CudaDriver.CU_STREAM_CAPTURE_STATUS_NONE();
            if (!capture.intoExisting()) {
                forget(capture.graph()); // the driver destroys the graph of a capture that made none
            }
            return unjoined ? CudaDriver.CUDA_ERROR_STREAM_CAPTURE_UNJOINED()
                    : CudaDriver.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED();
        }
        long h = capture.graph(); // the captured work was added to it node by node (SimulatedCaptureGraphs)
        s.captured = null;
        s.captureStatus = CudaDriver.CU_STREAM_CAPTURE_STATUS_NONE();
        graph.set(ValueLayout.JAVA_LONG, 0, h);
        return SUCCESS;
    }

    // ---- graphs and executables ----

    public int cuGraphInstantiateWithFlags(MemorySegment exec, MemorySegment graph, long flags) {
        List<StreamOp> ops = graphs.get(graph.address());
        if (ops == null) {
            return INVALID_HANDLE;
        }
        if (gpu.captureGraphs.capturedInto(graph.address())) {
            gpu.violations.add("cuGraphInstantiateWithFlags of a graph a stream capture still records into");
            return INVALID_VALUE; // the driver: not instantiable until the capture ends
        }
        String refusal = gpu.conditionals.refusal(graph.address());
        if (refusal != null) {
            gpu.violations.add("cuGraphInstantiateWithFlags of a graph with " + refusal);
            return INVALID_VALUE;
        }
        long autoFreeFlag = CudaDriver.CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH();
        if ((flags & ~autoFreeFlag) != 0) {
            return INVALID_VALUE; // no other flag is simulated
        }
        if (SimulatedGraphMemory.hasMemoryNodes(ops) && execOrigins.containsValue(graph.address())) {
            gpu.violations.add("cuGraphInstantiateWithFlags of a graph with memory nodes that has an executable already");
            return CudaDriver.CUDA_ERROR_NOT_SUPPORTED();
        }
        long h = gpu.newHandle();
        if ((flags & autoFreeFlag) != 0) {
            autoFree.add(h);
        }
        execs.put(h, gpu.conditionals.resolved(ops));
        execOrigins.put(h, graph.address());
        Runnable defaults = gpu.conditionals.defaultsOf(graph.address());
        if (defaults != null) {
            launchDefaults.put(h, defaults);
        }
        execOrders.put(h, launchOrder(graph.address()));
        disabled.put(h, new HashSet<>());
        exec.set(ValueLayout.JAVA_LONG, 0, h);
        return SUCCESS;
    }

    public int cuGraphLaunch(MemorySegment exec, MemorySegment stream) {
        List<StreamOp> ops = execs.get(exec.address());
        SimulatedStreams.Stream s = gpu.streams.stream(stream.address());
        if (ops == null || s == null) {
            return INVALID_HANDLE;
        }
        if (!gpu.graphMemory.beforeLaunch(ops, autoFree.contains(exec.address()), s)) {
            return INVALID_VALUE;
        }
        graphLaunches++;
        Runnable defaults = launchDefaults.get(exec.address());
        if (defaults != null) {
            StreamOp assign = new StreamOp(defaults, Set.of(), Set.of());
            assign.exec = exec.address();
            gpu.streams.submit(s, assign);
        }
        for (int i : execOrders.get(exec.address())) {
            if (disabled.get(exec.address()).contains(i)) {
                continue;
            }
            StreamOp op = ops.get(i);
            if (REMOVED.equals(op.kind)) {
                continue;
            }
            if (op.event != 0) {
                launchEventNode(op, s);
                continue;
            }
            if (usesFreedMemory(op)) {
                continue; // on a GPU: an illegal address, or a silent write into whatever is there now
            }
            gpu.graphMemory.launched(op);
            for (StreamOp queued : op.batch != null ? op.batch : List.of(op)) { // a batch node queues each of its operations
                StreamOp copy = queued.launchCopy();
                copy.exec = exec.address();
                gpu.streams.submit(s, copy);
            }
        }
        return SUCCESS;
    }

    /** For each live graph and executable, the device memory its nodes name that no longer exists. */
    List<String> danglingUses() {
        List<String> out = new ArrayList<>();
        for (Map.Entry<String, Map<Long, List<StreamOp>>> owners : Map.of("graph", graphs, "executable", execs).entrySet()) {
            for (Map.Entry<Long, List<StreamOp>> owner : owners.getValue().entrySet()) {
                for (StreamOp op : owner.getValue()) {
                    for (long use : op.deviceUses) {
                        if (!gpu.memory.exists(use)) {
                            out.add(owners.getKey() + " 0x" + Long.toHexString(owner.getKey()) + " names freed device memory 0x"
                                    + Long.toHexString(use));
                        }
                    }
                }
            }
        }
        return out;
    }

    /** Whether a node about to be replayed names device memory that no longer exists (recorded as a violation). */
    private boolean usesFreedMemory(StreamOp node) {
        for (long use : node.deviceUses) {
            if (!gpu.memory.exists(use)) {
                gpu.violations.add("cuGraphLaunch of an executable whose node uses freed device memory 0x"
                        + Long.toHexString(use));
                return true;
            }
        }
        return false;
    }

    /** Queues what an event node does at a replay: a record of its event, or a wait for the event's last record. */
    private void launchEventNode(StreamOp node, SimulatedStreams.Stream s) {
        SimulatedStreams.Event e = gpu.streams.events.get(node.event);
        if (e == null) {
            gpu.violations.add("a graph launch whose " + node.kind + " node names a destroyed event");
        } else if (node.kind.equals(RECORD)) {
            gpu.streams.record(s, e);
        } else {
            gpu.streams.await(s, e);
        }
    }

    /** Whether a node of a live graph or executable names {@code event}. */
    boolean namesEvent(long event) {
        for (Map<Long, List<StreamOp>> owners : List.of(graphs, execs)) {
            for (List<StreamOp> ops : owners.values()) {
                for (StreamOp op : ops) {
                    if (op.event == event) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    public int cuGraphUpload(MemorySegment exec, MemorySegment stream) {
        return execs.containsKey(exec.address()) && gpu.streams.stream(stream.address()) != null ? SUCCESS : INVALID_HANDLE;
    }

    public int cuGraphDestroy(MemorySegment graph) {
        if (execOrigins.containsValue(graph.address())) {
            gpu.violations.add("cuGraphDestroy of a graph a live executable was instantiated from");
        }
        if (gpu.conditionals.isBody(graph.address())) {
            gpu.violations.add("cuGraphDestroy of a conditional node's body, which the node owns");
            return INVALID_VALUE;
        }
        if (gpu.captureGraphs.capturedInto(graph.address())) {
            gpu.violations.add("cuGraphDestroy of a graph a stream capture still records into");
        }
        return forget(graph.address()) ? SUCCESS : INVALID_HANDLE;
    }

    /** Forgets {@code graph}, its bodies and their handles, as a destroy does; false when there was no such graph. */
    private boolean forget(long graph) {
        for (long body : gpu.conditionals.destroyed(graph)) {
            dependencies.remove(body);
            graphs.remove(body);
        }
        dependencies.remove(graph);
        return graphs.remove(graph) != null;
    }

    public int cuGraphExecDestroy(MemorySegment exec) {
        if (!execs.containsKey(exec.address())) {
            return INVALID_HANDLE;
        }
        for (SimulatedStreams.Stream s : gpu.streams.all()) {
            for (StreamOp op : s.queue) {
                if (op.exec == exec.address()) {
                    gpu.violations.add("cuGraphExecDestroy while a queued launch of it still runs");
                }
            }
        }
        execs.remove(exec.address());
        execOrigins.remove(exec.address());
        execOrders.remove(exec.address());
        disabled.remove(exec.address());
        launchDefaults.remove(exec.address());
        autoFree.remove(exec.address());
        return SUCCESS;
    }

    public int cuGraphExecUpdate_v2(MemorySegment exec, MemorySegment graph, MemorySegment info) {
        List<StreamOp> ops = graphs.get(graph.address());
        List<StreamOp> current = execs.get(exec.address());
        if (ops == null || current == null) {
            return INVALID_HANDLE;
        }
        if (SimulatedGraphMemory.hasMemoryNodes(ops) || SimulatedGraphMemory.hasMemoryNodes(current)) {
            gpu.violations.add("cuGraphExecUpdate with memory nodes: each graph's allocations have addresses of their own");
            return CudaDriver.CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE();
        }
        if (ops.size() != current.size()) {
            reportUpdate(info, CudaDriver.CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED(), 0, 0);
            return CudaDriver.CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE();
        }
        // As the driver: a node whose type differs from the node at its place is named, with that node.
        long origin = execOrigins.get(exec.address());
        List<StreamOp> was = graphs.get(origin);
        for (int i = 0; was != null && i < ops.size() && i < was.size(); i++) {
            if (typeOf(ops.get(i)) != typeOf(was.get(i))) {
                reportUpdate(info, CudaDriver.CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED(),
                        graphNodes.get(graph.address())[i], graphNodes.get(origin)[i]);
                return CudaDriver.CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE();
            }
        }
        reportUpdate(info, CudaDriver.CU_GRAPH_EXEC_UPDATE_SUCCESS(), 0, 0);
        execs.put(exec.address(), gpu.conditionals.resolved(ops));
        execOrders.put(exec.address(), launchOrder(graph.address()));
        return SUCCESS;
    }

    /** Fills a CUgraphExecUpdateResultInfo (its reason, then the nodes at fault, 0 for none) when one was passed. */
    private static void reportUpdate(MemorySegment info, int result, long errorNode, long errorFromNode) {
        if (info.byteSize() >= 24) {
            info.set(ValueLayout.JAVA_INT, 0, result);
            info.set(ValueLayout.JAVA_LONG, 8, errorNode);
            info.set(ValueLayout.JAVA_LONG, 16, errorFromNode);
        }
    }

    /**
     * The positions of {@code graph}'s nodes in an order its dependencies allow: of the nodes
     * whose dependencies are done, the one added last runs first.
     */
    int[] launchOrder(long graph) {
        List<int[]> deps = dependencies.get(graph);
        int[] order = new int[deps.size()];
        boolean[] done = new boolean[deps.size()];
        for (int k = 0; k < order.length; k++) {
            for (int i = deps.size() - 1; i >= 0; i--) {
                if (!done[i] && allDone(deps.get(i), done)) {
                    done[i] = true;
                    order[k] = i;
                    break;
                }
            }
        }
        return order;
    }

    private static boolean allDone(int[] positions, boolean[] done) {
        for (int p : positions) {
            if (!done[p]) {
                return false;
            }
        }
        return true;
    }

    // ---- nodes ----

    private void addNodes(long graph, int count) {
        long[] handles = new long[count];
        for (int i = 0; i < count; i++) {
            handles[i] = gpu.newHandle();
            nodes.put(handles[i], new NodeRef(graph, i));
        }
        graphNodes.put(graph, handles);
    }

    /** The captured operation a node of a live graph names; null for a stray node or a destroyed graph's. */
    private StreamOp nodeOp(long node) {
        NodeRef ref = nodes.get(node);
        List<StreamOp> ops = ref == null ? null : graphs.get(ref.graph());
        return ops == null ? null : ops.get(ref.index());
    }

    public int cuGraphGetNodes(MemorySegment graph, MemorySegment out, MemorySegment count) {
        long[] all = graphs.containsKey(graph.address()) ? graphNodes.get(graph.address()) : null;
        if (all == null) {
            return INVALID_VALUE;
        }
        long[] handles = Arrays.stream(all).filter(nodes::containsKey).toArray(); // without removed nodes
        MemorySegment n = count.reinterpret(8);
        if (out.address() != 0) {
            long room = Math.min(n.get(ValueLayout.JAVA_LONG, 0), handles.length);
            MemorySegment array = out.reinterpret(8 * room);
            for (int i = 0; i < room; i++) {
                array.setAtIndex(ValueLayout.JAVA_LONG, i, handles[i]);
            }
        }
        n.set(ValueLayout.JAVA_LONG, 0, handles.length);
        return SUCCESS;
    }

    public int cuGraphNodeGetType(MemorySegment node, MemorySegment type) {
        StreamOp op = nodeOp(node.address());
        if (op == null) {
            return INVALID_VALUE;
        }
        type.reinterpret(4).set(ValueLayout.JAVA_INT, 0, typeOf(op));
        return SUCCESS;
    }

    /**
     * Nodes built by hand, and captured kernels, host functions and memory nodes, are told apart;
     * a captured copy or memset is not (the simulated capture does not label it) and reads as an
     * empty node.
     */
    private static int typeOf(StreamOp op) {
        return op.kernel != null ? CudaDriver.CU_GRAPH_NODE_TYPE_KERNEL()
                : RECORD.equals(op.kind) ? CudaDriver.CU_GRAPH_NODE_TYPE_EVENT_RECORD()
                : WAIT.equals(op.kind) ? CudaDriver.CU_GRAPH_NODE_TYPE_WAIT_EVENT()
                : "MEMSET".equals(op.kind) ? CudaDriver.CU_GRAPH_NODE_TYPE_MEMSET()
                : "MEMCPY".equals(op.kind) ? CudaDriver.CU_GRAPH_NODE_TYPE_MEMCPY()
                : HOST.equals(op.kind) ? CudaDriver.CU_GRAPH_NODE_TYPE_HOST()
                : CHILD.equals(op.kind) ? CudaDriver.CU_GRAPH_NODE_TYPE_GRAPH()
                : "BATCH_MEM_OP".equals(op.kind) ? CudaDriver.CU_GRAPH_NODE_TYPE_BATCH_MEM_OP()
                : SimulatedGraphMemory.ALLOC_NODE.equals(op.kind) ? CudaDriver.CU_GRAPH_NODE_TYPE_MEM_ALLOC()
                : SimulatedGraphMemory.FREE_NODE.equals(op.kind) ? CudaDriver.CU_GRAPH_NODE_TYPE_MEM_FREE()
                : op.conditional != null ? CudaDriver.CU_GRAPH_NODE_TYPE_CONDITIONAL() : CudaDriver.CU_GRAPH_NODE_TYPE_EMPTY();
    }

    public int cuGraphKernelNodeGetParams_v2(MemorySegment node, MemorySegment params) {
        StreamOp op = nodeOp(node.address());
        if (op == null || op.kernel == null) {
            return INVALID_VALUE;
        }
        SimulatedModules.KernelNode k = op.kernel;
        MemorySegment p = params.reinterpret(CUDA_KERNEL_NODE_PARAMS_v2_st.sizeof());
        CUDA_KERNEL_NODE_PARAMS_v2_st.func(p, MemorySegment.ofAddress(k.function()));
        CUDA_KERNEL_NODE_PARAMS_v2_st.gridDimX(p, k.gx());
        CUDA_KERNEL_NODE_PARAMS_v2_st.gridDimY(p, k.gy());
        CUDA_KERNEL_NODE_PARAMS_v2_st.gridDimZ(p, k.gz());
        CUDA_KERNEL_NODE_PARAMS_v2_st.blockDimX(p, k.bx());
        CUDA_KERNEL_NODE_PARAMS_v2_st.blockDimY(p, k.by());
        CUDA_KERNEL_NODE_PARAMS_v2_st.blockDimZ(p, k.bz());
        CUDA_KERNEL_NODE_PARAMS_v2_st.sharedMemBytes(p, k.smem());
        // Like the driver's, the argument array stays valid as long as the graph (here: the fake).
        MemorySegment values = gpu.arena.allocate(8L * Math.max(1, k.raw().length), 8);
        MemorySegment pointers = gpu.arena.allocate(ValueLayout.ADDRESS, Math.max(1, k.raw().length));
        for (int i = 0; i < k.raw().length; i++) {
            values.setAtIndex(ValueLayout.JAVA_LONG, i, k.raw()[i]); // little-endian: narrow reads see the low bytes
            pointers.setAtIndex(ValueLayout.ADDRESS, i, values.asSlice(8L * i));
        }
        CUDA_KERNEL_NODE_PARAMS_v2_st.kernelParams(p, pointers);
        CUDA_KERNEL_NODE_PARAMS_v2_st.extra(p, MemorySegment.NULL);
        return SUCCESS;
    }

    /**
     * As the driver: {@code node} must be a node of the graph {@code exec} was instantiated from,
     * and that graph must still be alive; an in-place update does not change which graph that is.
     */
    public int cuGraphExecKernelNodeSetParams_v2(MemorySegment exec, MemorySegment node, MemorySegment params) {
        List<StreamOp> ops = execs.get(exec.address());
        if (ops == null) {
            return INVALID_HANDLE;
        }
        NodeRef ref = nodes.get(node.address());
        StreamOp op = nodeOp(node.address());
        if (op == null || ref.graph() != execOrigins.get(exec.address()) || ref.index() >= ops.size()
                || ops.get(ref.index()).kernel == null) {
            return INVALID_VALUE;
        }
        StreamOp updated = kernelOp(params);
        if (updated == null) {
            return INVALID_VALUE;
        }
        List<StreamOp> next = new ArrayList<>(ops);
        next.set(ref.index(), updated);
        execs.put(exec.address(), List.copyOf(next));
        return SUCCESS;
    }

    /** The operation a {@code CUDA_KERNEL_NODE_PARAMS_v2} describes; null when it names no loaded function. */
    private StreamOp kernelOp(MemorySegment params) {
        MemorySegment p = params.reinterpret(CUDA_KERNEL_NODE_PARAMS_v2_st.sizeof());
        SimulatedModules.Function f = gpu.modules.functions.get(CUDA_KERNEL_NODE_PARAMS_v2_st.func(p).address());
        if (f == null) {
            return null;
        }
        return gpu.modules.kernelOp(new SimulatedModules.KernelNode(CUDA_KERNEL_NODE_PARAMS_v2_st.func(p).address(),
                CUDA_KERNEL_NODE_PARAMS_v2_st.gridDimX(p), CUDA_KERNEL_NODE_PARAMS_v2_st.gridDimY(p),
                CUDA_KERNEL_NODE_PARAMS_v2_st.gridDimZ(p), CUDA_KERNEL_NODE_PARAMS_v2_st.blockDimX(p),
                CUDA_KERNEL_NODE_PARAMS_v2_st.blockDimY(p), CUDA_KERNEL_NODE_PARAMS_v2_st.blockDimZ(p),
                CUDA_KERNEL_NODE_PARAMS_v2_st.sharedMemBytes(p),
                gpu.modules.readArguments(f, CUDA_KERNEL_NODE_PARAMS_v2_st.kernelParams(p))));
    }

    // ---- graphs built node by node ----

    public int cuGraphCreate(MemorySegment graph, int flags) {
        if (flags != 0) {
            return INVALID_VALUE;
        }
        graph.set(ValueLayout.JAVA_LONG, 0, createEmpty());
        return SUCCESS;
    }

    /** A new graph without nodes: what cuGraphCreate makes, and each body of a conditional node. */
    long createEmpty() {
        long h = gpu.newHandle();
        graphs.put(h, List.of());
        graphNodes.put(h, new long[0]);
        dependencies.put(h, new ArrayList<>());
        return h;
    }

    public int cuGraphAddKernelNode_v2(MemorySegment node, MemorySegment graph, MemorySegment deps, long count,
            MemorySegment params) {
        return addNode(node, graph, deps, count, kernelOp(params));
    }

    public int cuGraphAddMemsetNode(MemorySegment node, MemorySegment graph, MemorySegment deps, long count,
            MemorySegment params, MemorySegment context) {
        MemorySegment p = params.reinterpret(CUDA_MEMSET_NODE_PARAMS_st.sizeof());
        StreamOp op = CUDA_MEMSET_NODE_PARAMS_st.height(p) != 1 ? null
                : gpu.memory.memsetOp(CUDA_MEMSET_NODE_PARAMS_st.dst(p), CUDA_MEMSET_NODE_PARAMS_st.value(p),
                        CUDA_MEMSET_NODE_PARAMS_st.elementSize(p), CUDA_MEMSET_NODE_PARAMS_st.width(p));
        return addNode(node, graph, deps, count, described(op, "MEMSET"));
    }

    public int cuGraphAddMemcpyNode(MemorySegment node, MemorySegment graph, MemorySegment deps, long count,
            MemorySegment params, MemorySegment context) {
        MemorySegment p = params.reinterpret(CUDA_MEMCPY3D_st.sizeof());
        int device = CudaDriver.CU_MEMORYTYPE_DEVICE();
        int host = CudaDriver.CU_MEMORYTYPE_HOST();
        boolean oneRow = CUDA_MEMCPY3D_st.Height(p) == 1 && CUDA_MEMCPY3D_st.Depth(p) == 1;
        int srcType = CUDA_MEMCPY3D_st.srcMemoryType(p);
        int dstType = CUDA_MEMCPY3D_st.dstMemoryType(p);
        boolean types = (srcType == device || srcType == host) && (dstType == device || dstType == host);
        boolean srcHost = srcType == host;
        boolean dstHost = dstType == host;
        StreamOp op = !oneRow || !types ? null : gpu.memory.nodeCopyOp(
                dstHost ? CUDA_MEMCPY3D_st.dstHost(p).address() : CUDA_MEMCPY3D_st.dstDevice(p), dstHost,
                srcHost ? CUDA_MEMCPY3D_st.srcHost(p).address() : CUDA_MEMCPY3D_st.srcDevice(p), srcHost,
                CUDA_MEMCPY3D_st.WidthInBytes(p));
        return addNode(node, graph, deps, count, described(op, "MEMCPY"));
    }

    /** A batch of stream memory operations as a node ({@link SimulatedMemOps}): each launch queues them in order. */
    public int cuGraphAddBatchMemOpNode(MemorySegment node, MemorySegment graph, MemorySegment deps, long count,
            MemorySegment params) {
        return addNode(node, graph, deps, count, described(gpu.memOps.batchNode(params), "BATCH_MEM_OP"));
    }

    public int cuGraphAddEventRecordNode(MemorySegment node, MemorySegment graph, MemorySegment deps, long count,
            MemorySegment event) {
        return addNode(node, graph, deps, count, eventNode(event.address(), RECORD));
    }

    public int cuGraphAddEventWaitNode(MemorySegment node, MemorySegment graph, MemorySegment deps, long count,
            MemorySegment event) {
        return addNode(node, graph, deps, count, eventNode(event.address(), WAIT));
    }

    /** An event node's operation; null (refused) when {@code event} is no live event. */
    private StreamOp eventNode(long event, String kind) {
        if (!gpu.streams.events.containsKey(event)) {
            return null;
        }
        StreamOp op = described(new StreamOp(() -> { }, Set.of(), Set.of()), kind);
        op.event = event;
        return op;
    }

    public int cuGraphExecEventRecordNodeSetEvent(MemorySegment exec, MemorySegment node, MemorySegment event) {
        return setEvent(exec, node, event.address(), RECORD);
    }

    public int cuGraphExecEventWaitNodeSetEvent(MemorySegment exec, MemorySegment node, MemorySegment event) {
        return setEvent(exec, node, event.address(), WAIT);
    }

    /** As the driver: {@code node} is an event node of {@code kind} of the graph {@code exec} was instantiated from. */
    private int setEvent(MemorySegment exec, MemorySegment node, long event, String kind) {
        List<StreamOp> ops = execs.get(exec.address());
        if (ops == null) {
            return INVALID_HANDLE;
        }
        NodeRef ref = nodes.get(node.address());
        if (ref == null || ref.graph() != execOrigins.get(exec.address()) || ref.index() >= ops.size()
                || !kind.equals(ops.get(ref.index()).kind)) {
            return INVALID_VALUE;
        }
        StreamOp updated = eventNode(event, kind);
        if (updated == null) {
            return INVALID_HANDLE;
        }
        List<StreamOp> next = new ArrayList<>(ops);
        next.set(ref.index(), updated);
        execs.put(exec.address(), List.copyOf(next));
        return SUCCESS;
    }

    private static StreamOp described(StreamOp op, String kind) {
        if (op != null) {
            op.kind = kind;
        }
        return op;
    }

    /** Appends {@code op} to {@code graph} after {@code deps}, as the driver checks them: nodes of that graph, each once. */
    int addNode(MemorySegment node, MemorySegment graph, MemorySegment deps, long count, StreamOp op) {
        List<StreamOp> ops = graphs.get(graph.address());
        if (ops == null || op == null) {
            return ops == null ? INVALID_HANDLE : INVALID_VALUE;
        }
        int[] positions = positions(graph.address(), deps, count);
        if (positions == null) {
            return INVALID_VALUE;
        }
        node.set(ValueLayout.JAVA_LONG, 0, append(graph.address(), positions, op));
        return SUCCESS;
    }

    /** The positions in {@code graph} of the {@code count} nodes in {@code deps}; null unless each is a node of it, named once. */
    int[] positions(long graph, MemorySegment deps, long count) {
        MemorySegment array = deps.reinterpret(8 * count);
        int[] positions = new int[(int) count];
        for (int i = 0; i < count; i++) {
            NodeRef ref = nodes.get(array.getAtIndex(ValueLayout.JAVA_LONG, i));
            if (ref == null || ref.graph() != graph) {
                return null;
            }
            positions[i] = ref.index();
            for (int j = 0; j < i; j++) {
                if (positions[j] == positions[i]) {
                    return null;
                }
            }
        }
        return positions;
    }

    /** Appends {@code op} to live graph {@code graph} after the nodes at {@code positions}; returns its node handle. */
    long append(long graph, int[] positions, StreamOp op) {
        List<StreamOp> next = new ArrayList<>(graphs.get(graph));
        next.add(op);
        graphs.put(graph, List.copyOf(next));
        dependencies.get(graph).add(positions);
        return appendNode(graph);
    }

    /** The handle of the node at {@code position} of live graph {@code graph}. */
    long nodeAt(long graph, int position) {
        return graphNodes.get(graph)[position];
    }

    private long appendNode(long graph) {
        long[] before = graphNodes.get(graph);
        long[] after = Arrays.copyOf(before, before.length + 1);
        after[before.length] = gpu.newHandle();
        nodes.put(after[before.length], new NodeRef(graph, before.length));
        graphNodes.put(graph, after);
        return after[before.length];
    }

    /** A host node: at each launch, the function runs with its user data on the thread that makes the GPU progress. */
    public int cuGraphAddHostNode(MemorySegment node, MemorySegment graph, MemorySegment deps, long count,
            MemorySegment params) {
        MemorySegment p = params.reinterpret(CUDA_HOST_NODE_PARAMS_st.sizeof());
        MemorySegment fn = CUDA_HOST_NODE_PARAMS_st.fn(p);
        MemorySegment userData = CUDA_HOST_NODE_PARAMS_st.userData(p);
        if (fn.equals(MemorySegment.NULL)) {
            return addNode(node, graph, deps, count, null);
        }
        return addNode(node, graph, deps, count, described(new StreamOp(() -> CUhostFn.invoke(fn, userData), Set.of(),
                Set.of()), HOST));
    }

    /**
     * A child graph node: the child is copied as it is now (its operations, in its launch order)
     * into one operation that runs them in turn. As the driver, a child with memory nodes is
     * refused; stricter than the driver, so is one with event nodes (the simulation runs a child
     * inline, outside any stream order an event could name).
     */
    public int cuGraphAddChildGraphNode(MemorySegment node, MemorySegment graph, MemorySegment deps, long count,
            MemorySegment child) {
        List<StreamOp> ops = graphs.get(child.address());
        if (ops == null) {
            return INVALID_VALUE;
        }
        if (SimulatedGraphMemory.hasMemoryNodes(ops) || ops.stream().anyMatch(op -> op.event != 0)) {
            gpu.violations.add("cuGraphAddChildGraphNode of a graph with memory or event nodes");
            return CudaDriver.CUDA_ERROR_NOT_SUPPORTED();
        }
        List<StreamOp> resolved = gpu.conditionals.resolved(ops);
        List<StreamOp> ordered = new ArrayList<>();
        Set<Long> deviceUses = new HashSet<>();
        Set<Long> hostUses = new HashSet<>();
        for (int i : launchOrder(child.address())) {
            ordered.add(resolved.get(i));
            deviceUses.addAll(resolved.get(i).deviceUses);
            hostUses.addAll(resolved.get(i).hostUses);
        }
        StreamOp op = new StreamOp(() -> ordered.forEach(o -> o.action.run()), deviceUses, hostUses);
        return addNode(node, graph, deps, count, described(op, CHILD));
    }

    /**
     * Destroys a node of a live graph: it leaves the graph's listing and every dependency from or
     * to it; its position stays, as an operation that does nothing and names nothing, so the
     * positions of the nodes after it do not move. Executables made before keep their copy.
     */
    public int cuGraphDestroyNode(MemorySegment node) {
        NodeRef ref = nodes.get(node.address());
        List<StreamOp> ops = ref == null ? null : graphs.get(ref.graph());
        if (ops == null) {
            return INVALID_VALUE;
        }
        nodes.remove(node.address());
        List<StreamOp> next = new ArrayList<>(ops);
        next.set(ref.index(), described(new StreamOp(() -> { }, Set.of(), Set.of()), REMOVED));
        graphs.put(ref.graph(), List.copyOf(next));
        List<int[]> deps = dependencies.get(ref.graph());
        for (int i = 0; i < deps.size(); i++) {
            deps.set(i, i == ref.index() ? new int[0]
                    : Arrays.stream(deps.get(i)).filter(d -> d != ref.index()).toArray());
        }
        return SUCCESS;
    }

    /**
     * Adds edges between nodes of one graph, as the driver checks them: nodes of that graph, an
     * edge that does not exist yet; a programmatic edge joins two kernel nodes and leaves from the
     * programmatic or launch-order port, a default edge from the default port; the other ports are
     * 0. Stricter than the driver, an edge that would close a cycle is refused here rather than at
     * instantiation. A programmatic edge is kept ({@link FakeDriverApi#programmaticEdges}) and orders
     * like a full one: the consumer's earliest start here is the producer's end.
     */
    public int cuGraphAddDependencies_v2(MemorySegment graph, MemorySegment from, MemorySegment to,
            MemorySegment edgeData, long count) {
        List<StreamOp> ops = graphs.get(graph.address());
        if (ops == null) {
            return INVALID_VALUE;
        }
        MemorySegment fromNodes = from.reinterpret(8 * count);
        MemorySegment toNodes = to.reinterpret(8 * count);
        MemorySegment edges = edgeData.equals(MemorySegment.NULL) ? null
                : edgeData.reinterpret(count * CUgraphEdgeData_st.sizeof());
        List<int[]> deps = dependencies.get(graph.address());
        for (int i = 0; i < count; i++) {
            NodeRef f = nodes.get(fromNodes.getAtIndex(ValueLayout.JAVA_LONG, i));
            NodeRef t = nodes.get(toNodes.getAtIndex(ValueLayout.JAVA_LONG, i));
            if (f == null || t == null || f.graph() != graph.address() || t.graph() != graph.address()
                    || f.index() == t.index() || Arrays.stream(deps.get(t.index())).anyMatch(d -> d == f.index())
                    || reaches(deps, f.index(), t.index())) {
                return INVALID_VALUE;
            }
            if (edges != null) {
                MemorySegment e = edges.asSlice(i * CUgraphEdgeData_st.sizeof(), CUgraphEdgeData_st.sizeof());
                int type = CUgraphEdgeData_st.type(e);
                int port = CUgraphEdgeData_st.from_port(e);
                boolean programmatic = type == CudaDriver.CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC();
                boolean portOk = programmatic ? port == CudaDriver.CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC()
                        || port == CudaDriver.CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER()
                        : type == CudaDriver.CU_GRAPH_DEPENDENCY_TYPE_DEFAULT() && port == 0;
                boolean kernels = ops.get(f.index()).kernel != null && ops.get(t.index()).kernel != null;
                if (!portOk || CUgraphEdgeData_st.to_port(e) != 0 || programmatic && !kernels) {
                    return INVALID_VALUE;
                }
                if (programmatic) {
                    programmaticEdges.add(new int[] {f.index(), t.index(), port});
                }
            }
            int[] before = deps.get(t.index());
            int[] after = Arrays.copyOf(before, before.length + 1);
            after[before.length] = f.index();
            deps.set(t.index(), after);
        }
        return SUCCESS;
    }

    /** Whether {@code target}'s position is reached from {@code start} by following dependencies (a new edge target -> start closes a cycle). */
    private static boolean reaches(List<int[]> deps, int start, int target) {
        java.util.ArrayDeque<Integer> todo = new java.util.ArrayDeque<>(List.of(start));
        Set<Integer> seen = new HashSet<>();
        while (!todo.isEmpty()) {
            int at = todo.pop();
            if (at == target) {
                return true;
            }
            if (seen.add(at)) {
                for (int d : deps.get(at)) {
                    todo.push(d);
                }
            }
        }
        return false;
    }

    public int cuGraphClone(MemorySegment clone, MemorySegment original) {
        List<StreamOp> ops = graphs.get(original.address());
        if (ops == null) {
            return INVALID_HANDLE;
        }
        if (SimulatedGraphMemory.hasMemoryNodes(ops)) {
            gpu.violations.add("cuGraphClone of a graph with memory nodes");
            return CudaDriver.CUDA_ERROR_NOT_SUPPORTED();
        }
        if (ops.stream().anyMatch(op -> op.conditional != null)) {
            gpu.violations.add("cuGraphClone of a graph with conditional nodes");
            return CudaDriver.CUDA_ERROR_NOT_SUPPORTED(); // as the H200's driver answers
        }
        long h = gpu.newHandle();
        graphs.put(h, ops); // the operations are immutable: the clone may share them
        addNodes(h, ops.size());
        for (int i = 0; i < ops.size(); i++) {
            if (REMOVED.equals(ops.get(i).kind)) {
                nodes.remove(graphNodes.get(h)[i]); // a removed node is not copied
            }
        }
        dependencies.put(h, new ArrayList<>(dependencies.get(original.address())));
        clone.set(ValueLayout.JAVA_LONG, 0, h);
        return SUCCESS;
    }

    /** Writes a DOT digraph: one node per graph node, labelled with its type (and a kernel's name), one edge per dependency. */
    public int cuGraphDebugDotPrint(MemorySegment graph, MemorySegment path, int flags) {
        List<StreamOp> ops = graphs.get(graph.address());
        if (ops == null) {
            return INVALID_HANDLE;
        }
        StringBuilder dot = new StringBuilder("digraph dot {\n");
        for (int i = 0; i < ops.size(); i++) {
            StreamOp op = ops.get(i);
            String label = op.kernel != null ? "KERNEL\\n" + gpu.modules.functions.get(op.kernel.function()).name
                    : op.kind != null ? op.kind : "EMPTY";
            dot.append("  node").append(i).append(" [label=\"").append(label).append("\"];\n");
            for (int d : dependencies.get(graph.address()).get(i)) {
                dot.append("  node").append(d).append(" -> node").append(i).append(";\n");
            }
        }
        dot.append("}\n");
        try {
            Files.writeString(Path.of(path.reinterpret(Long.MAX_VALUE).getString(0)), dot);
        } catch (IOException e) {
            return CudaDriver.CUDA_ERROR_OPERATING_SYSTEM();
        }
        return SUCCESS;
    }

    /** As the driver: {@code node} must be a node of the graph {@code exec} was instantiated from. */
    public int cuGraphNodeSetEnabled(MemorySegment exec, MemorySegment node, int enabled) {
        Set<Integer> off = disabled.get(exec.address());
        NodeRef ref = nodes.get(node.address());
        if (off == null) {
            return INVALID_HANDLE;
        }
        if (ref == null || ref.graph() != execOrigins.get(exec.address()) || ref.index() >= execs.get(exec.address()).size()
                || execs.get(exec.address()).get(ref.index()).event != 0) { // only kernel, memset and copy nodes
            return INVALID_VALUE;
        }
        if (enabled != 0) {
            off.remove(ref.index());
        } else {
            off.add(ref.index());
        }
        return SUCCESS;
    }
}
