package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.bindings.driver.CUDA_HOST_NODE_PARAMS_st;
import dev.gatun.cuda.bindings.driver.CUDA_MEMCPY3D_st;
import dev.gatun.cuda.bindings.driver.CUDA_MEMSET_NODE_PARAMS_st;
import dev.gatun.cuda.bindings.driver.CUgraphEdgeData_st;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Layer 2, graphs built node by node: create an empty graph, add kernel, memset, copy, event
 * record, event wait, host and child graph nodes with their dependencies, remove a node, clone a graph, print it as DOT, and
 * enable or disable a node of an executable or set its event. Each call names its operation once, owns its out-parameters and checks its result.
 *
 * <p>None is on a hot path, and the probe did not cover them: each makes the context current
 * first. Every function here but {@code cuGraphAddDependencies_v2} (CUDA 12.3, checked before
 * its call) is older than Gatun's minimum driver (12.0), so no other needs a version check. Parameter blocks are built in an arena the caller owns for the call: the
 * driver copies them before it returns.
 */
public final class GraphBuildCalls {

    private static final String CREATE = "cuGraphCreate";
    private static final String ADD_KERNEL = "cuGraphAddKernelNode_v2";
    private static final String ADD_MEMSET = "cuGraphAddMemsetNode";
    private static final String ADD_MEMCPY = "cuGraphAddMemcpyNode";
    private static final String ADD_EVENT_RECORD = "cuGraphAddEventRecordNode";
    private static final String ADD_EVENT_WAIT = "cuGraphAddEventWaitNode";
    private static final String CLONE = "cuGraphClone";
    private static final String DOT = "cuGraphDebugDotPrint";
    private static final String SET_ENABLED = "cuGraphNodeSetEnabled";
    private static final String SET_RECORD_EVENT = "cuGraphExecEventRecordNodeSetEvent";
    private static final String SET_WAIT_EVENT = "cuGraphExecEventWaitNodeSetEvent";
    private static final String ADD_HOST = "cuGraphAddHostNode";
    private static final String ADD_CHILD = "cuGraphAddChildGraphNode";
    private static final String DESTROY_NODE = "cuGraphDestroyNode";
    private static final String ADD_DEPENDENCIES = "cuGraphAddDependencies_v2";
    private static final byte PROGRAMMATIC = (byte) CudaDriver.CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC();
    private static final byte PORT_PROGRAMMATIC = (byte) CudaDriver.CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC();
    private static final byte PORT_LAUNCH_ORDER = (byte) CudaDriver.CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER();
    private static final int DEVICE_MEMORY = CudaDriver.CU_MEMORYTYPE_DEVICE();
    private static final int HOST_MEMORY = CudaDriver.CU_MEMORYTYPE_HOST();
    /** Everything the driver can print about each node: types, parameters, handles. */
    private static final int DOT_FLAGS = CudaDriver.CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE();

    private final Checked c;

    GraphBuildCalls(Checked c) {
        this.c = c;
    }

    /** A new empty graph. */
    public MemorySegment create() {
        c.current(CREATE);
        MemorySegment out = c.out();
        // Safety: out holds the CUgraph the driver writes; flags must be 0.
        c.check(c.api.cuGraphCreate(out, 0), CREATE);
        return handle(out);
    }

    /**
     * Adds a kernel node to {@code graph}, after {@code dependencies} (an array of node handles
     * of that graph, maybe empty).
     *
     * @param params a filled-in {@code CUDA_KERNEL_NODE_PARAMS_v2}
     */
    public MemorySegment addKernel(MemorySegment graph, MemorySegment dependencies, MemorySegment params) {
        c.current(ADD_KERNEL);
        MemorySegment out = c.out();
        // Safety: graph is live; dependencies holds count live nodes of it; params names a
        // function of a module the graph holds and an argument array with one valid slot per
        // parameter, whose values the driver copies during the call; out holds the node handle.
        c.check(c.api.cuGraphAddKernelNode_v2(out, graph, dependencies, count(dependencies), params), ADD_KERNEL);
        return handle(out);
    }

    /**
     * Adds a memset node: {@code width} elements of {@code elementSize} bytes (1 or 4) at
     * {@code address} set to {@code value}.
     */
    public MemorySegment addMemset(MemorySegment graph, MemorySegment dependencies, long address, int value,
            int elementSize, long width, Arena arena) {
        c.current(ADD_MEMSET);
        MemorySegment params = CUDA_MEMSET_NODE_PARAMS_st.allocate(arena);
        CUDA_MEMSET_NODE_PARAMS_st.dst(params, address);
        CUDA_MEMSET_NODE_PARAMS_st.value(params, value);
        CUDA_MEMSET_NODE_PARAMS_st.elementSize(params, elementSize);
        CUDA_MEMSET_NODE_PARAMS_st.width(params, width);
        CUDA_MEMSET_NODE_PARAMS_st.height(params, 1);
        CUDA_MEMSET_NODE_PARAMS_st.pitch(params, width * elementSize); // one row: the pitch is unused
        MemorySegment out = c.out();
        // Safety: the range lies inside an allocation of this context the graph holds; graph
        // and dependencies as in addKernel; params is zeroed apart from the fields set above.
        c.check(c.api.cuGraphAddMemsetNode(out, graph, dependencies, count(dependencies), params, c.context()),
                ADD_MEMSET);
        return handle(out);
    }

    /**
     * Adds a node copying {@code bytes} bytes from {@code source} to {@code destination}, each a
     * device address, or a host address when its {@code …OnHost} flag is set (pinned memory
     * of this context, which the driver can reach at every launch).
     */
    public MemorySegment addCopy(MemorySegment graph, MemorySegment dependencies, long destination,
            boolean destinationOnHost, long source, boolean sourceOnHost, long bytes, Arena arena) {
        c.current(ADD_MEMCPY);
        MemorySegment params = CUDA_MEMCPY3D_st.allocate(arena);
        if (sourceOnHost) {
            CUDA_MEMCPY3D_st.srcMemoryType(params, HOST_MEMORY);
            CUDA_MEMCPY3D_st.srcHost(params, MemorySegment.ofAddress(source));
        } else {
            CUDA_MEMCPY3D_st.srcMemoryType(params, DEVICE_MEMORY);
            CUDA_MEMCPY3D_st.srcDevice(params, source);
        }
        CUDA_MEMCPY3D_st.srcPitch(params, bytes);
        CUDA_MEMCPY3D_st.srcHeight(params, 1);
        if (destinationOnHost) {
            CUDA_MEMCPY3D_st.dstMemoryType(params, HOST_MEMORY);
            CUDA_MEMCPY3D_st.dstHost(params, MemorySegment.ofAddress(destination));
        } else {
            CUDA_MEMCPY3D_st.dstMemoryType(params, DEVICE_MEMORY);
            CUDA_MEMCPY3D_st.dstDevice(params, destination);
        }
        CUDA_MEMCPY3D_st.dstPitch(params, bytes);
        CUDA_MEMCPY3D_st.dstHeight(params, 1);
        CUDA_MEMCPY3D_st.WidthInBytes(params, bytes);
        CUDA_MEMCPY3D_st.Height(params, 1);
        CUDA_MEMCPY3D_st.Depth(params, 1);
        MemorySegment out = c.out();
        // Safety: both ranges lie inside allocations of this context the graph holds (device
        // buffers, or pinned host buffers the driver copies to and from at each launch); a 1D
        // copy is one row of one slice; every other field (offsets, arrays) is zero.
        c.check(c.api.cuGraphAddMemcpyNode(out, graph, dependencies, count(dependencies), params, c.context()),
                ADD_MEMCPY);
        return handle(out);
    }

    /** Adds a node that records {@code event} once its dependencies are done. */
    public MemorySegment addEventRecord(MemorySegment graph, MemorySegment dependencies, MemorySegment event) {
        c.current(ADD_EVENT_RECORD);
        MemorySegment out = c.out();
        // Safety: graph and dependencies as in addKernel; event is a live event of this context
        // the graph holds; out holds the node handle.
        c.check(c.api.cuGraphAddEventRecordNode(out, graph, dependencies, count(dependencies), event), ADD_EVENT_RECORD);
        return handle(out);
    }

    /** Adds a node that waits for the work before {@code event}'s last record (at each launch). */
    public MemorySegment addEventWait(MemorySegment graph, MemorySegment dependencies, MemorySegment event) {
        c.current(ADD_EVENT_WAIT);
        MemorySegment out = c.out();
        // Safety: as in addEventRecord.
        c.check(c.api.cuGraphAddEventWaitNode(out, graph, dependencies, count(dependencies), event), ADD_EVENT_WAIT);
        return handle(out);
    }

    /**
     * Adds a host node: at each launch, once its dependencies are done, the driver's thread runs
     * {@link HostFunction}'s stub with {@code token}, a {@linkplain HostFunction#register registered}
     * callback's, and the nodes after it wait for it to return.
     */
    public MemorySegment addHost(MemorySegment graph, MemorySegment dependencies, long token, Arena arena) {
        c.current(ADD_HOST);
        MemorySegment params = CUDA_HOST_NODE_PARAMS_st.allocate(arena);
        CUDA_HOST_NODE_PARAMS_st.fn(params, HostFunction.stub());
        CUDA_HOST_NODE_PARAMS_st.userData(params, MemorySegment.ofAddress(token));
        MemorySegment out = c.out();
        // Safety: graph and dependencies as in addKernel; fn is the process's one upcall stub, in
        // the global arena and never freed, which never throws and makes no CUDA call itself;
        // userData is a token the stub reads as a number, never an address; the driver copies params.
        c.check(c.api.cuGraphAddHostNode(out, graph, dependencies, count(dependencies), params), ADD_HOST);
        return handle(out);
    }

    /**
     * Adds a node that runs {@code child}: the driver clones the child graph into the node, so
     * later changes to {@code child} (or its destruction) do not change the node.
     */
    public MemorySegment addChild(MemorySegment graph, MemorySegment dependencies, MemorySegment child) {
        c.current(ADD_CHILD);
        MemorySegment out = c.out();
        // Safety: graph and dependencies as in addKernel; child is a live graph of this context,
        // without memory nodes, which the driver only reads (it clones it); out holds the node handle.
        c.check(c.api.cuGraphAddChildGraphNode(out, graph, dependencies, count(dependencies), child), ADD_CHILD);
        return handle(out);
    }

    /**
     * Adds a programmatic dependency of kernel node {@code to} on kernel node {@code from}
     * ({@code CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC}), leaving from {@code from}'s programmatic
     * port (its blocks triggered or exited) or, with {@code launchOrder}, its launch-order port
     * (its blocks all began).
     *
     * @throws dev.gatun.cuda.DriverTooOldException before any call, on a driver older than CUDA 12.3
     */
    public void addProgrammaticEdge(MemorySegment graph, MemorySegment from, MemorySegment to, boolean launchOrder,
            Arena arena) {
        c.require(DriverFeature.PROGRAMMATIC_EDGES);
        c.current(ADD_DEPENDENCIES);
        MemorySegment fromNodes = arena.allocate(ValueLayout.ADDRESS);
        fromNodes.set(ValueLayout.ADDRESS, 0, from);
        MemorySegment toNodes = arena.allocate(ValueLayout.ADDRESS);
        toNodes.set(ValueLayout.ADDRESS, 0, to);
        MemorySegment edge = CUgraphEdgeData_st.allocate(arena); // zeroed: the reserved bytes must be 0
        CUgraphEdgeData_st.type(edge, PROGRAMMATIC);
        CUgraphEdgeData_st.from_port(edge, launchOrder ? PORT_LAUNCH_ORDER : PORT_PROGRAMMATIC);
        // Safety: graph is live; from and to are live kernel nodes of it (one each, the arrays of
        // length 1 the count says); edge is one CUgraphEdgeData, to_port the default (0).
        c.check(c.api.cuGraphAddDependencies_v2(graph, fromNodes, toNodes, edge, 1), ADD_DEPENDENCIES);
    }

    /** Removes {@code node} from its graph, and every dependency from or to it. */
    public void destroyNode(MemorySegment node) {
        c.current(DESTROY_NODE);
        // Safety: node is a node of a live graph of this context, not yet destroyed; the graph's
        // executables were instantiated from it before and keep their own copies of its nodes.
        c.check(c.api.cuGraphDestroyNode(node), DESTROY_NODE);
    }

    /** A copy of {@code graph}: its nodes and dependencies, with new node handles. */
    public MemorySegment cloneGraph(MemorySegment graph) {
        c.current(CLONE);
        MemorySegment out = c.out();
        // Safety: out holds the CUgraph the driver writes; graph is live.
        c.check(c.api.cuGraphClone(out, graph), CLONE);
        return handle(out);
    }

    /** Writes {@code graph} as DOT to the file named by {@code path}, a NUL-terminated string. */
    public void printDot(MemorySegment graph, MemorySegment path) {
        c.current(DOT);
        // Safety: graph is live; path is a NUL-terminated file name the caller keeps alive.
        c.check(c.api.cuGraphDebugDotPrint(graph, path, DOT_FLAGS), DOT);
    }

    /**
     * Enables or disables, for later launches of {@code exec}, its node {@code node}: a kernel,
     * memset or copy node of the graph {@code exec} was instantiated from.
     */
    public void setEnabled(MemorySegment exec, MemorySegment node, boolean enabled) {
        c.current(SET_ENABLED);
        // Safety: exec is live; node is a node of the live graph it was instantiated from.
        c.check(c.api.cuGraphNodeSetEnabled(exec, node, enabled ? 1 : 0), SET_ENABLED);
    }

    /** Makes event record node {@code node} of {@code exec} record {@code event} in later launches. */
    public void setRecordEvent(MemorySegment exec, MemorySegment node, MemorySegment event) {
        c.current(SET_RECORD_EVENT);
        // Safety: exec is live; node is an event record node of the live graph it was
        // instantiated from; event is a live event of this context the executable holds.
        c.check(c.api.cuGraphExecEventRecordNodeSetEvent(exec, node, event), SET_RECORD_EVENT);
    }

    /** Makes event wait node {@code node} of {@code exec} wait for {@code event} in later launches. */
    public void setWaitEvent(MemorySegment exec, MemorySegment node, MemorySegment event) {
        c.current(SET_WAIT_EVENT);
        // Safety: as in setRecordEvent, for an event wait node.
        c.check(c.api.cuGraphExecEventWaitNodeSetEvent(exec, node, event), SET_WAIT_EVENT);
    }

    private static long count(MemorySegment nodes) {
        return nodes.byteSize() / ValueLayout.ADDRESS.byteSize();
    }

    private static MemorySegment handle(MemorySegment out) {
        return MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
    }
}
