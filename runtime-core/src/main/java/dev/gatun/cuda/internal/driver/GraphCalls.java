package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Layer 2, stream capture and graphs: each call names its operation once, owns its
 * out-parameters and checks its result.
 *
 * <p>A launch and an upload act in their stream's context: the current-context probe
 * ({@code runtime-bench/src/c/current_context_probe.c}, run on the H200) showed a graph launch
 * succeeding, with the right result, while another context was current, so they only check
 * that the context is not poisoned, and a warmed launch is one driver call. Every other call
 * makes the context current first (instantiating acts on the current context; the rest are
 * not on a hot path), the destroys too (cold paths: the safe side), which hand back their raw
 * result for retirement.
 */
public final class GraphCalls {

    /** {@code CUstreamCaptureMode} values. */
    public static final int MODE_GLOBAL = CudaDriver.CU_STREAM_CAPTURE_MODE_GLOBAL();
    public static final int MODE_THREAD_LOCAL = CudaDriver.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL();
    public static final int MODE_RELAXED = CudaDriver.CU_STREAM_CAPTURE_MODE_RELAXED();
    /** What ending a capture reports when something invalidated it meanwhile. */
    public static final int CAPTURE_INVALIDATED = CudaDriver.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED();

    private static final String BEGIN_CAPTURE = "cuStreamBeginCapture";
    private static final String END_CAPTURE = "cuStreamEndCapture";
    private static final String INSTANTIATE = "cuGraphInstantiate";
    private static final String UPDATE = "cuGraphExecUpdate";
    private static final String LAUNCH = "cuGraphLaunch";
    private static final String UPLOAD = "cuGraphUpload";
    private static final String DESTROY = "cuGraphDestroy";
    private static final String DESTROY_EXEC = "cuGraphExecDestroy";
    private static final String GET_NODES = "cuGraphGetNodes";
    private static final String NODE_TYPE = "cuGraphNodeGetType";
    private static final String KERNEL_NODE_PARAMS = "cuGraphKernelNodeGetParams";
    private static final String SET_KERNEL_NODE_PARAMS = "cuGraphExecKernelNodeSetParams";
    private static final int UPDATE_FAILURE = CudaDriver.CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE();
    private static final int KERNEL_NODE = CudaDriver.CU_GRAPH_NODE_TYPE_KERNEL();
    private static final long AUTO_FREE_ON_LAUNCH = CudaDriver.CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH();

    private final Checked c;

    GraphCalls(Checked c) {
        this.c = c;
    }

    /**
     * Puts {@code stream} into capture mode.
     *
     * @param mode one of the {@code MODE_*} constants
     */
    public void beginCapture(MemorySegment stream, int mode) {
        c.current(BEGIN_CAPTURE);
        // Safety: the caller passes a live stream of this context that is not capturing, and
        // holds the stream's capture lock, so no fence is recorded into the capture.
        c.check(c.api.cuStreamBeginCapture_v2(stream, mode), BEGIN_CAPTURE);
    }

    /**
     * Ends the capture on {@code stream} and returns the captured graph. The driver ends the
     * capture even when it fails; {@link #CAPTURE_INVALIDATED} says something invalidated it.
     */
    public MemorySegment endCapture(MemorySegment stream) {
        c.current(END_CAPTURE);
        MemorySegment out = c.out();
        // Safety: out holds the CUgraph the driver writes; the caller began this capture.
        c.check(c.api.cuStreamEndCapture(stream, out), END_CAPTURE);
        return MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
    }

    /**
     * A new executable of {@code graph}, a live graph of this context.
     *
     * @param autoFreeOnLaunch {@code CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH}: each launch
     *     first frees what the previous launch's allocation nodes left allocated, so that a graph
     *     whose allocations outlive it can be launched again
     */
    public MemorySegment instantiate(MemorySegment graph, boolean autoFreeOnLaunch) {
        c.current(INSTANTIATE);
        MemorySegment out = c.out();
        // Safety: out holds the CUgraphExec the driver writes; the caller passes a live graph.
        c.check(c.api.cuGraphInstantiateWithFlags(out, graph, autoFreeOnLaunch ? AUTO_FREE_ON_LAUNCH : 0), INSTANTIATE);
        return MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
    }

    /**
     * What {@link #update} learned: the driver's {@code CUgraphExecUpdateResultInfo}, its result
     * and the nodes at fault ({@code errorNode} of the new graph, {@code errorFromNode} of the
     * executable's; {@link MemorySegment#NULL} where the driver named none).
     */
    public record UpdateOutcome(int result, MemorySegment errorNode, MemorySegment errorFromNode) {
    }

    private static final UpdateOutcome APPLIED = new UpdateOutcome(CudaDriver.CU_GRAPH_EXEC_UPDATE_SUCCESS(),
            MemorySegment.NULL, MemorySegment.NULL);

    /**
     * Updates {@code exec} in place so that its later launches run {@code graph}.
     *
     * @return {@code CU_GRAPH_EXEC_UPDATE_SUCCESS} (one shared outcome, nothing allocated), or the
     *     driver's reason and the nodes it blamed when it refused the update; {@code exec} is then unchanged
     */
    public UpdateOutcome update(MemorySegment exec, MemorySegment graph) {
        c.current(UPDATE);
        MemorySegment info = c.out();
        // Safety: both handles are live and of this context, and no launch of exec is in
        // progress (the caller's contract); info (64 bytes) holds the 24-byte
        // CUgraphExecUpdateResultInfo the driver fills in.
        info.set(ValueLayout.JAVA_INT, 0, CudaDriver.CU_GRAPH_EXEC_UPDATE_ERROR()); // unclassified, should it stay unwritten
        DriverLog.asking(); // a refusal is an answer (its reason is returned), not a failure to explain
        int r = -1;
        try {
            r = c.api.cuGraphExecUpdate_v2(exec, graph, info);
        } finally {
            DriverLog.answered(r, r == UPDATE_FAILURE);
        }
        if (r == UPDATE_FAILURE) {
            // CUgraphExecUpdateResultInfo: the result (an int, padded to 8), then errorNode and
            // errorFromNode (CUgraphNode handles, NULL where the driver names none).
            return new UpdateOutcome(info.get(ValueLayout.JAVA_INT, 0),
                    MemorySegment.ofAddress(info.get(ValueLayout.JAVA_LONG, 8)),
                    MemorySegment.ofAddress(info.get(ValueLayout.JAVA_LONG, 16)));
        }
        c.check(r, UPDATE);
        return APPLIED;
    }

    /** Launches {@code exec} on {@code stream}. Allocates nothing. */
    public void launch(MemorySegment exec, MemorySegment stream) {
        c.live(LAUNCH);
        // Safety: the caller passes a live executable that holds every owner its nodes use, and
        // an open stream, both of this context; the stream names the context the launch runs in.
        c.check(c.api.cuGraphLaunch(exec, stream), LAUNCH);
    }

    /** Uploads {@code exec} to the device in {@code stream}'s order, so its first launch does not pay for it. */
    public void upload(MemorySegment exec, MemorySegment stream) {
        c.live(UPLOAD);
        // Safety: as in launch.
        c.check(c.api.cuGraphUpload(exec, stream), UPLOAD);
    }

    /**
     * Destroys a graph; the raw result, for retirement (sticky results still poison).
     *
     * @param graph a graph of this context that no executable was instantiated from, or whose
     *     executables are destroyed: the driver names an executable's nodes by its graph's
     */
    public int destroy(MemorySegment graph) {
        int current = c.currentForRaw();
        if (current != 0) {
            return current;
        }
        // Safety: the caller's contract: the graph is live and nothing uses it any more.
        return c.observe(c.api.cuGraphDestroy(graph), DESTROY);
    }

    /**
     * Destroys an executable; the raw result, for retirement.
     *
     * @param exec an executable of this context whose every launch has completed
     */
    public int destroyExec(MemorySegment exec) {
        int current = c.currentForRaw();
        if (current != 0) {
            return current;
        }
        // Safety: the caller's contract: the fences of every stream it was launched on completed.
        return c.observe(c.api.cuGraphExecDestroy(exec), DESTROY_EXEC);
    }

    /** The node handles of {@code graph}, a live graph of this context, in the driver's order, allocated in {@code arena}. */
    public MemorySegment nodes(MemorySegment graph, Arena arena) {
        c.current(GET_NODES);
        MemorySegment count = c.out();
        // Safety: count holds the size_t the driver writes; a NULL array asks for the count only.
        c.check(c.api.cuGraphGetNodes(graph, MemorySegment.NULL, count), GET_NODES);
        long n = count.get(ValueLayout.JAVA_LONG, 0);
        MemorySegment nodes = arena.allocate(ValueLayout.ADDRESS, Math.max(1, n));
        // Safety: nodes has room for the n handles count says the driver may write.
        c.check(c.api.cuGraphGetNodes(graph, nodes, count), GET_NODES);
        return nodes.asSlice(0, ValueLayout.ADDRESS.byteSize() * Math.min(n, count.get(ValueLayout.JAVA_LONG, 0)));
    }

    /** Whether {@code node}, a node of a live graph of this context, launches a kernel. */
    public boolean isKernelNode(MemorySegment node) {
        return nodeType(node) == KERNEL_NODE;
    }

    /** The {@code CUgraphNodeType} of {@code node}, a node of a live graph of this context. */
    public int nodeType(MemorySegment node) {
        c.current(NODE_TYPE);
        MemorySegment type = c.out();
        // Safety: type holds the enum the driver writes; node belongs to a live graph.
        c.check(c.api.cuGraphNodeGetType(node, type), NODE_TYPE);
        return type.get(ValueLayout.JAVA_INT, 0);
    }

    /**
     * Writes the description of kernel node {@code node} into {@code params}, a
     * {@code CUDA_KERNEL_NODE_PARAMS_v2} (its argument array stays valid as long as the graph).
     */
    public void kernelNodeParams(MemorySegment node, MemorySegment params) {
        c.current(KERNEL_NODE_PARAMS);
        // Safety: node is a kernel node of a live graph; params is sized for the struct.
        c.check(c.api.cuGraphKernelNodeGetParams_v2(node, params), KERNEL_NODE_PARAMS);
    }

    /**
     * Sets, for later launches of {@code exec}, the description of its node {@code node}: a node
     * of the graph {@code exec} was instantiated from, which must still be alive.
     */
    public void setKernelNodeParams(MemorySegment exec, MemorySegment node, MemorySegment params) {
        c.current(SET_KERNEL_NODE_PARAMS);
        // Safety: exec is live; node is a kernel node of the live graph it was instantiated
        // from; params describes a kernel of a module exec holds; the driver copies the
        // argument values during the call.
        c.check(c.api.cuGraphExecKernelNodeSetParams_v2(exec, node, params), SET_KERNEL_NODE_PARAMS);
    }
}
