package dev.gatun.cuda.testing;

import static dev.gatun.cuda.testing.FakeDriverApi.INVALID_HANDLE;
import static dev.gatun.cuda.testing.FakeDriverApi.INVALID_VALUE;
import static dev.gatun.cuda.testing.FakeDriverApi.SUCCESS;

import dev.gatun.cuda.bindings.driver.CUDA_KERNEL_NODE_PARAMS_v2_st;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The simulated driver's stream capture, graphs and graph executables. A capture records the
 * operations submitted to its stream instead of running them; the graph is that list, one node
 * per operation; a replay queues copies of the executable's operations on the launch stream.
 */
final class SimulatedCaptureAndGraphs {

    private record NodeRef(long graph, int index) {
    }

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
        return SUCCESS;
    }

    public int cuStreamEndCapture(MemorySegment stream, MemorySegment graph) {
        SimulatedStreams.Stream s = gpu.streams.stream(stream.address());
        if (s == null || s.captured == null) {
            return s == null ? INVALID_HANDLE : CudaDriver.CUDA_ERROR_ILLEGAL_STATE();
        }
        if (s.captureStatus == CudaDriver.CU_STREAM_CAPTURE_STATUS_INVALIDATED()) {
            s.captured = null;
            s.captureStatus = CudaDriver.CU_STREAM_CAPTURE_STATUS_NONE();
            return CudaDriver.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED();
        }
        long h = gpu.newHandle();
        graphs.put(h, List.copyOf(s.captured));
        addNodes(h, s.captured.size());
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
        long h = gpu.newHandle();
        execs.put(h, ops);
        execOrigins.put(h, graph.address());
        exec.set(ValueLayout.JAVA_LONG, 0, h);
        return SUCCESS;
    }

    public int cuGraphLaunch(MemorySegment exec, MemorySegment stream) {
        List<StreamOp> ops = execs.get(exec.address());
        SimulatedStreams.Stream s = gpu.streams.stream(stream.address());
        if (ops == null || s == null) {
            return INVALID_HANDLE;
        }
        graphLaunches++;
        for (StreamOp op : ops) {
            StreamOp copy = new StreamOp(op.action, op.deviceUses, op.hostUses);
            copy.module = op.module;
            copy.exec = exec.address();
            gpu.streams.submit(s, copy);
        }
        return SUCCESS;
    }

    public int cuGraphUpload(MemorySegment exec, MemorySegment stream) {
        return execs.containsKey(exec.address()) && gpu.streams.stream(stream.address()) != null ? SUCCESS : INVALID_HANDLE;
    }

    public int cuGraphDestroy(MemorySegment graph) {
        if (execOrigins.containsValue(graph.address())) {
            gpu.violations.add("cuGraphDestroy of a graph a live executable was instantiated from");
        }
        return graphs.remove(graph.address()) == null ? INVALID_HANDLE : SUCCESS;
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
        return SUCCESS;
    }

    public int cuGraphExecUpdate_v2(MemorySegment exec, MemorySegment graph, MemorySegment info) {
        List<StreamOp> ops = graphs.get(graph.address());
        List<StreamOp> current = execs.get(exec.address());
        if (ops == null || current == null) {
            return INVALID_HANDLE;
        }
        if (ops.size() != current.size()) {
            return CudaDriver.CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE(); // topology changed
        }
        execs.put(exec.address(), ops);
        return SUCCESS;
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
        long[] handles = graphs.containsKey(graph.address()) ? graphNodes.get(graph.address()) : null;
        if (handles == null) {
            return INVALID_VALUE;
        }
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
        // Only kernel nodes are told apart: Gatun inspects nothing else.
        type.reinterpret(4).set(ValueLayout.JAVA_INT, 0, op.kernel != null ? CudaDriver.CU_GRAPH_NODE_TYPE_KERNEL()
                : CudaDriver.CU_GRAPH_NODE_TYPE_EMPTY());
        return SUCCESS;
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
        if (op == null || ref.graph() != execOrigins.get(exec.address()) || ops.get(ref.index()).kernel == null) {
            return INVALID_VALUE;
        }
        MemorySegment p = params.reinterpret(CUDA_KERNEL_NODE_PARAMS_v2_st.sizeof());
        SimulatedModules.Function f = gpu.modules.functions.get(CUDA_KERNEL_NODE_PARAMS_v2_st.func(p).address());
        if (f == null) {
            return INVALID_VALUE;
        }
        SimulatedModules.KernelNode updated = new SimulatedModules.KernelNode(CUDA_KERNEL_NODE_PARAMS_v2_st.func(p).address(),
                CUDA_KERNEL_NODE_PARAMS_v2_st.gridDimX(p), CUDA_KERNEL_NODE_PARAMS_v2_st.gridDimY(p),
                CUDA_KERNEL_NODE_PARAMS_v2_st.gridDimZ(p), CUDA_KERNEL_NODE_PARAMS_v2_st.blockDimX(p),
                CUDA_KERNEL_NODE_PARAMS_v2_st.blockDimY(p), CUDA_KERNEL_NODE_PARAMS_v2_st.blockDimZ(p),
                CUDA_KERNEL_NODE_PARAMS_v2_st.sharedMemBytes(p),
                gpu.modules.readArguments(f, CUDA_KERNEL_NODE_PARAMS_v2_st.kernelParams(p)));
        List<StreamOp> next = new ArrayList<>(ops);
        next.set(ref.index(), gpu.modules.kernelOp(updated));
        execs.put(exec.address(), List.copyOf(next));
        return SUCCESS;
    }
}
