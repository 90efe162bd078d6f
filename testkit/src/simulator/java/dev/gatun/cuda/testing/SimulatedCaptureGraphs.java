package dev.gatun.cuda.testing;

import static dev.gatun.cuda.testing.FakeDriverApi.INVALID_HANDLE;
import static dev.gatun.cuda.testing.FakeDriverApi.INVALID_VALUE;
import static dev.gatun.cuda.testing.FakeDriverApi.SUCCESS;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * The simulated driver's graph of a capture in progress: every capture records into a graph of
 * {@link SimulatedCaptureAndGraphs} from its begin on, each captured operation a node after the
 * capture's dependency set, which then becomes that node alone. A capture begun with
 * {@code cuStreamBeginCapture} records into a new graph that its end returns (or destroys, when
 * the capture was invalidated); one begun with {@code cuStreamBeginCaptureToGraph} into the graph
 * it names, which its end returns and never destroys. {@code cuStreamGetCaptureInfo_v3} reports the
 * graph and the dependency set (with edge data, all default: zeros), and
 * {@code cuStreamUpdateCaptureDependencies_v2} adds to it or replaces it. Streams that joined a
 * capture share its graph and its one dependency set (the simulation orders all of a capture's
 * work in one chain).
 *
 * <p>Stricter than the driver, each recorded as a violation: a conditional node added to a graph
 * being captured into after dependencies that are not the capture's current ones (stale: work
 * was captured since they were read); work captured after such a node was added and before it
 * became the capture's dependency (that work would not wait for the node); a capture into a graph
 * that is not a conditional node's body (Gatun only captures into bodies); two captures into one
 * graph at once.
 */
final class SimulatedCaptureGraphs {

    /** A capture in progress: the graph it records into, whether it was begun into an existing graph, its dependency set. */
    static final class Capture {
        private final long graph;
        private final boolean intoExisting;
        private int[] dependencies;
        /** A conditional node added to its graph that is not yet in its dependency set, or -1. */
        private int pendingConditional = -1;

        Capture(long graph, boolean intoExisting, int[] dependencies) {
            this.graph = graph;
            this.intoExisting = intoExisting;
            this.dependencies = dependencies;
        }

        long graph() {
            return graph;
        }

        boolean intoExisting() {
            return intoExisting;
        }
    }

    private final FakeDriverApi gpu;
    /** Each capture in progress, by the operation list its streams share (SimulatedStreams.Stream.captured). */
    private final Map<List<StreamOp>, Capture> captures = new IdentityHashMap<>();
    /** How many captures were begun into an existing graph. */
    int capturesToGraph;

    SimulatedCaptureGraphs(FakeDriverApi gpu) {
        this.gpu = gpu;
    }

    /** A capture began: {@code ops} will record into {@code graph} after the nodes at {@code dependencies}. */
    void begun(List<StreamOp> ops, long graph, boolean intoExisting, int[] dependencies) {
        captures.put(ops, new Capture(graph, intoExisting, dependencies));
    }

    /** {@code op} was captured into {@code ops}' capture: a node after its dependencies, and then its one dependency. */
    void captured(List<StreamOp> ops, StreamOp op) {
        Capture c = captures.get(ops);
        if (c.pendingConditional >= 0) {
            gpu.violations.add("work was captured after a conditional node was added to the capture's graph and "
                    + "before that node became the capture's dependency: it does not wait for the node");
            c.pendingConditional = -1;
        }
        gpu.graphs.append(c.graph, c.dependencies, op);
        c.dependencies = new int[] {gpu.graphs.graphs.get(c.graph).size() - 1};
    }

    /** The capture of {@code ops} ended (or failed to): it is forgotten, and returned. */
    Capture ended(List<StreamOp> ops) {
        return captures.remove(ops);
    }

    /** How many captures in progress record into a new graph (begun with cuStreamBeginCapture). */
    int newGraphsInProgress() {
        return (int) captures.values().stream().filter(c -> !c.intoExisting).count();
    }

    /** Whether a capture in progress records into {@code graph} or into a body inside it. */
    boolean capturedInto(long graph) {
        for (Capture c : captures.values()) {
            if (gpu.conditionals.within(c.graph, graph)) {
                return true;
            }
        }
        return false;
    }

    /**
     * A conditional node was just added to {@code graph} after the nodes at {@code positions}
     * (SimulatedConditionals): when a capture records into that graph, they must be its current
     * dependency set, and the node must become that set before more work is captured.
     */
    void conditionalAdded(long graph, int[] positions) {
        for (Capture c : captures.values()) {
            if (c.graph == graph) {
                int[] sorted = positions.clone();
                int[] current = c.dependencies.clone();
                Arrays.sort(sorted);
                Arrays.sort(current);
                if (!Arrays.equals(sorted, current)) {
                    gpu.violations.add("a conditional node was added to a capture's graph after stale dependencies "
                            + Arrays.toString(sorted) + ", not the capture's current " + Arrays.toString(current));
                }
                c.pendingConditional = gpu.graphs.graphs.get(graph).size() - 1;
            }
        }
    }

    public int cuStreamGetCaptureInfo_v3(MemorySegment stream, MemorySegment status, MemorySegment id,
            MemorySegment graph, MemorySegment dependencies, MemorySegment edgeData, MemorySegment count) {
        SimulatedStreams.Stream s = gpu.streams.stream(stream.address());
        if (s == null) {
            return INVALID_HANDLE;
        }
        if (status.address() == 0 || edgeData.address() != 0 && dependencies.address() == 0) {
            return INVALID_VALUE;
        }
        int st = s.joinedTo != null ? s.joinedTo.captureStatus : s.captureStatus;
        status.reinterpret(4).set(ValueLayout.JAVA_INT, 0, st);
        Capture c = s.captured == null ? null : captures.get(s.captured);
        if (c == null || st != CudaDriver.CU_STREAM_CAPTURE_STATUS_ACTIVE()) {
            return SUCCESS; // nothing else is valid: the caller must read the status first
        }
        if (id.address() != 0) {
            id.reinterpret(8).set(ValueLayout.JAVA_LONG, 0, System.identityHashCode(c));
        }
        if (graph.address() != 0) {
            graph.reinterpret(8).set(ValueLayout.JAVA_LONG, 0, c.graph);
        }
        int n = c.dependencies.length;
        if (dependencies.address() != 0) {
            // As the driver: arrays of its own, valid until the next call on the stream (here: for good).
            MemorySegment nodes = gpu.arena.allocate(ValueLayout.JAVA_LONG, Math.max(1, n));
            for (int i = 0; i < n; i++) {
                nodes.setAtIndex(ValueLayout.JAVA_LONG, i, gpu.graphs.nodeAt(c.graph, c.dependencies[i]));
            }
            dependencies.reinterpret(8).set(ValueLayout.JAVA_LONG, 0, n == 0 ? 0 : nodes.address());
            if (edgeData.address() != 0) {
                MemorySegment edges = gpu.arena.allocate(8L * Math.max(1, n), 8); // zeroed: default edges
                edgeData.reinterpret(8).set(ValueLayout.JAVA_LONG, 0, n == 0 ? 0 : edges.address());
            }
        }
        if (count.address() != 0) {
            count.reinterpret(8).set(ValueLayout.JAVA_LONG, 0, n);
        }
        return SUCCESS;
    }

    public int cuStreamUpdateCaptureDependencies_v2(MemorySegment stream, MemorySegment dependencies,
            MemorySegment edgeData, long count, int flags) {
        SimulatedStreams.Stream s = gpu.streams.stream(stream.address());
        if (s == null) {
            return INVALID_HANDLE;
        }
        Capture c = s.captured == null ? null : captures.get(s.captured);
        if (c == null) {
            return CudaDriver.CUDA_ERROR_ILLEGAL_STATE(); // not capturing
        }
        boolean set = flags == CudaDriver.CU_STREAM_SET_CAPTURE_DEPENDENCIES();
        if (!set && flags != CudaDriver.CU_STREAM_ADD_CAPTURE_DEPENDENCIES() || !defaultEdges(edgeData, count)) {
            return INVALID_VALUE;
        }
        int[] positions = gpu.graphs.positions(c.graph, dependencies, count);
        if (positions == null) {
            return INVALID_VALUE;
        }
        c.dependencies = set ? positions
                : Arrays.stream(concat(c.dependencies, positions)).distinct().toArray();
        if (c.pendingConditional >= 0 && Arrays.stream(c.dependencies).anyMatch(p -> p == c.pendingConditional)) {
            c.pendingConditional = -1;
        }
        return SUCCESS;
    }

    public int cuStreamBeginCaptureToGraph(MemorySegment stream, MemorySegment graph, MemorySegment dependencies,
            MemorySegment edgeData, long count, int mode) {
        SimulatedStreams.Stream s = gpu.streams.stream(stream.address());
        if (s == null) {
            return INVALID_HANDLE;
        }
        if (s.captured != null) {
            return CudaDriver.CUDA_ERROR_ILLEGAL_STATE();
        }
        if (!gpu.graphs.graphs.containsKey(graph.address()) || !defaultEdges(edgeData, count)) {
            return INVALID_VALUE;
        }
        int[] positions = gpu.graphs.positions(graph.address(), dependencies, count);
        if (positions == null) {
            return INVALID_VALUE;
        }
        if (!gpu.conditionals.isBody(graph.address())) {
            gpu.violations.add("cuStreamBeginCaptureToGraph into a graph that is not a conditional node's body");
        }
        for (Capture c : captures.values()) {
            if (c.graph == graph.address()) {
                gpu.violations.add("cuStreamBeginCaptureToGraph into a graph another capture records into");
            }
        }
        capturesToGraph++;
        s.captured = new java.util.ArrayList<>();
        s.captureStatus = CudaDriver.CU_STREAM_CAPTURE_STATUS_ACTIVE();
        s.captureCarrier = gpu.contexts.captureOwner(mode);
        begun(s.captured, graph.address(), true, positions);
        return SUCCESS;
    }

    /** Whether {@code edgeData} is NULL or {@code count} default edges (zeros): the only ones the simulation knows. */
    static boolean defaultEdges(MemorySegment edgeData, long count) {
        if (edgeData.address() == 0) {
            return true;
        }
        MemorySegment edges = edgeData.reinterpret(8 * count);
        for (long i = 0; i < count; i++) {
            if (edges.get(ValueLayout.JAVA_LONG, 8 * i) != 0) {
                return false;
            }
        }
        return true;
    }

    private static int[] concat(int[] a, int[] b) {
        int[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
