package dev.gatun.cuda;

import dev.gatun.cuda.bindings.driver.CUDA_KERNEL_NODE_PARAMS_v2_st;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.GraphAllocations;
import dev.gatun.cuda.internal.context.Holds;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.Retirement;
import dev.gatun.cuda.internal.context.StreamState;
import dev.gatun.cuda.internal.driver.GraphBuildCalls;
import dev.gatun.cuda.internal.driver.GraphCalls;
import dev.gatun.cuda.internal.events.GraphUpdateEvent;
import dev.gatun.cuda.internal.launch.KernelNodes;
import dev.gatun.cuda.internal.memory.AllocationKind;
import dev.gatun.cuda.internal.memory.ArenaSpace;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Locale;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An executable graph ({@link Graph#instantiate()}): what {@link #launch(Stream)} replays.
 *
 * <p>It holds everything the graphs it ran hold (the one it was made from, and each one it was
 * {@linkplain #update updated} to run), the buffers of its {@linkplain #updateKernelNode node
 * updates}, the graph it was made from (the driver names its nodes by that graph's) and the
 * graph it runs now. Closing it hands it to the context's retirement queue, which destroys it
 * once the work queued before the close on every stream it was launched on has completed, and
 * only then lets go of what it holds.
 *
 * <p>Nodes of a graph built node by node are changed one at a time in an executable with
 * {@link #setEnabled}, {@link #setKernelNode} and {@link #setEvent}; a captured graph's kernel nodes, which have no
 * {@link GraphNode}, with {@link #updateKernelNode}.
 *
 * <p>A warmed launch allocates nothing and looks nothing up. Launches and updates may come
 * from any threads: the driver forbids launching an executable while it is being updated, so
 * each update waits for a launch call under way (and a launch for an update), and applies to
 * the launches that begin after it returns; launches queued before keep running what they
 * were launched with.
 */
public final class GraphExec extends Owner {

    private static final Logger LOG = LoggerFactory.getLogger(GraphExec.class);

    private final CudaContext context;
    private final GraphCalls calls;
    private final GraphBuildCalls building;
    private final Resource resource;
    /** How an arena's replay order queues this executable's launches: made once, so a replay allocates nothing. */
    private final ArenaSpace.Replay replay = this::queue;

    /** The executable handle, what it holds, and its retirement. */
    private static final class Resource extends NativeResource {
        final MemorySegment handle;
        /**
         * The owners its nodes use: of every graph it ran and of its node updates. Pinned memory its
         * copy nodes touch learns from these holds that its host access must wait for this
         * executable's launches (on the streams its usage lists) until they let go of it.
         */
        final Holds holds = new Holds(this);
        /** The graph it was instantiated from; held as long as it lives. */
        final Graph.Resource origin;
        /**
         * Guards current and makes each driver call on the executable (a launch, an upload, an
         * update) exclusive. Taken under a stream's lock by launches; nothing that retires an
         * owner (and so may take a stream's lock) runs under it.
         */
        final Object lock = new Object();
        /** How many nodes had been added to the origin by hand when it was instantiated: the ones it has. */
        final int nodes;
        /** The graph it runs now (at first the origin); held once more on its own. */
        Graph.Resource current;
        /** The origin's allocations, when it has memory nodes (it then runs the origin for life); else null. */
        final GraphAllocations memory;
        /** The origin's capture arena (every graph it runs has the same: updates across arenas are refused); else null. */
        final ArenaSpace arena;

        Resource(ContextState state, MemorySegment handle, Graph.Resource origin, int nodes) {
            super(state, OwnerKind.GRAPH_EXEC);
            this.handle = handle;
            this.origin = origin;
            this.nodes = nodes;
            this.current = origin;
            this.memory = origin.memory;
            this.arena = origin.arena;
        }

        @Override
        protected Retirement.Release howToFree() {
            return new Retirement.Release() {
                @Override
                public int free() {
                    // Every stream it was launched on has passed a later fence: no launch of it remains.
                    int r = context.calls().graphs().destroyExec(handle);
                    if (r == 0) {
                        origin.executableDestroyed(); // a graph with memory nodes may have another now
                        dropHolds(); // only now: a graph must outlive the executables made from it
                    }
                    return r;
                }

                @Override
                public void abandoned() {
                    // The handle is leaked, but closed and idle: nothing can launch or update it
                    // again, so what it held (graphs, buffers, modules) is retired in turn.
                    dropHolds();
                }
            };
        }

        /** Lets go of what the executable held; once, after its destroy or when retirement gives it up. */
        private void dropHolds() {
            holds.releaseAll();
            Graph.Resource last;
            synchronized (lock) {
                last = current;
            }
            last.unhold();
            origin.unhold();
        }

        @Override
        protected boolean synchronizingFree() {
            return true; // it may free device memory the executable's nodes own
        }

        @Override
        public String identity() {
            return "GraphExec#" + id() + " (device " + context.device() + ")";
        }
    }

    /** An executable the driver made, and how many nodes its graph had then. */
    private record Instantiated(MemorySegment handle, int nodes) {
    }

    GraphExec(CudaContext context, Graph.Resource graph) {
        graph.checkOpen();
        graph.hold(); // as origin
        Instantiated made;
        try {
            made = instantiate(context, graph);
        } catch (CudaException e) {
            if (graph.memory == null) {
                graph.unhold();
                throw e;
            }
            made = instantiateAfterLadder(context, graph, e);
        } catch (RuntimeException e) {
            graph.unhold();
            throw e;
        }
        MemorySegment handle = made.handle();
        int nodes = made.nodes();
        Resource r = new Resource(context.state(), handle, graph, nodes);
        graph.hold(); // as the graph it runs now
        r.holds.addAll(graph.holds);
        super(r);
        this.context = context;
        this.calls = context.state().calls().graphs();
        this.building = context.state().calls().graphBuilding();
        this.resource = r;
    }

    /** Instantiates {@code graph} under its monitor: no node is added while the driver copies it. */
    private static Instantiated instantiate(CudaContext context, Graph.Resource graph) {
        synchronized (graph.building) {
            graph.checkConditionals();
            graph.checkOneExecutable();
            // With memory nodes, each launch frees what the previous one left allocated (the
            // graph's allocations outlive a launch), so the executable can be launched again.
            MemorySegment handle = context.state().calls().graphs().instantiate(graph.handle, graph.memory != null);
            graph.executables++;
            return new Instantiated(handle, graph.added);
        }
    }

    /**
     * After {@code failure}: a graph with memory nodes reserves graph memory, so out of memory it
     * climbs the ladder (outside the graph's monitor) and is instantiated again, checks included.
     * Whatever it then throws drops the origin hold taken for it.
     */
    private static Instantiated instantiateAfterLadder(CudaContext context, Graph.Resource graph,
            CudaException failure) {
        try {
            return context.ladder().retry(failure, AllocationKind.GRAPH_INSTANTIATE, 0,
                    () -> instantiate(context, graph));
        } catch (RuntimeException | Error e) {
            graph.unhold();
            throw e;
        }
    }

    /** {@return the context this executable belongs to} */
    public CudaContext context() {
        return context;
    }

    /**
     * Launches this executable on {@code stream}: a replay of its graph. Allocates nothing once
     * warmed.
     *
     * @param stream a stream of this executable's context
     * @throws CudaException when the driver refuses; the launch may have been queued anyway
     */
    public void launch(Stream stream) {
        StreamState s = checked(stream);
        if (resource.arena != null) {
            // A graph of a capture arena: after the replays of the arena's graphs queued on other streams.
            resource.arena.orderReplay(s, replay);
            return;
        }
        GraphAllocations memory = resource.memory;
        // A relaunch of a graph with memory nodes first frees, in this stream's order, what the
        // last launch left allocated: it must follow the work other streams queued on that memory.
        MemorySegment relay = memory == null ? null : memory.relayBeforeRelaunch(s);
        try {
            queue(s, relay);
        } finally {
            if (relay != null) {
                context.state().events().release(relay); // the wait on it is queued (or nothing is)
            }
        }
    }

    /** Queues a launch on {@code s}, after a wait on {@code relay} when it is not null. */
    private void queue(StreamState s, MemorySegment relay) {
        GraphAllocations memory = resource.memory;
        synchronized (s.lock()) {
            s.checkOpen();
            resource.usedOn(s);
            if (relay != null) {
                // An event of this context recorded on its synchronous stream after waits for
                // other streams; this stream is open and its lock is held.
                context.state().calls().streams().waitEvent(s.handle(), relay);
            }
            synchronized (resource.lock) {
                try {
                    calls.launch(resource.handle, s.handle());
                    if (memory != null) {
                        memory.launched(); // its allocation nodes allocate from now on
                    }
                } finally {
                    // Its nodes write buffers they name by address: synchronous operations must
                    // order after it, even when it failed (it may have been queued).
                    s.submitted();
                }
            }
        }
    }

    /**
     * Uploads this executable to the device in {@code stream}'s order, so that its first launch
     * does not pay for it.
     *
     * @param stream a stream of this executable's context
     */
    public void upload(Stream stream) {
        StreamState s = checked(stream);
        synchronized (s.lock()) {
            s.checkOpen();
            resource.usedOn(s);
            synchronized (resource.lock) {
                calls.upload(resource.handle, s.handle());
            }
        }
    }

    /** Checks this executable and {@code stream}. */
    private StreamState checked(Stream stream) {
        resource.checkOpen();
        StreamState s = stream.state();
        if (stream.context() != context) {
            context.checkSame(stream.context(), "the stream");
        }
        return s;
    }

    /**
     * Updates this executable in place ({@code cuGraphExecUpdate}) so that later launches run
     * {@code graph}, when {@code graph} has the topology of the graph this executable runs now.
     * As {@link #tryUpdate(Graph)}, which also says why an update was refused.
     *
     * @param graph a graph of this executable's context
     * @return false when the update was refused ({@link #tryUpdate(Graph)} says why); this
     *     executable is then unchanged
     * @throws IllegalArgumentException when {@code graph} is a conditional node's body (update to
     *     the graph that holds the node)
     * @throws IllegalStateException for what {@link Graph#instantiate()} refuses in {@code graph}
     *     (a conditional body without nodes, an unused conditional handle)
     * @throws CudaException when the driver fails otherwise; the update may have been applied
     *     all the same, so this executable then holds the buffers and modules of both graphs
     */
    public boolean update(Graph graph) {
        return tryUpdate(graph).applied();
    }

    /**
     * Updates this executable in place ({@code cuGraphExecUpdate}) so that later launches run
     * {@code graph}, or says why it cannot: the driver's reason ({@code CUgraphExecUpdateResult}:
     * the topology, a node's type, function, parameters or attributes changed), or Gatun's. On
     * success it then holds what {@code graph} holds, and {@code graph} itself until it runs
     * another. The usual policy, update and instantiate where refused, is
     * {@code GraphSlot}'s re-capture, which counts both paths and every reason.
     *
     * <p>An executable of a graph with memory nodes, or an update to such a graph, is never
     * applied in place ({@link GraphUpdateResult#MEMORY_NODES}, no driver call): each graph's
     * allocations have addresses of their own, which an update would hand to this executable.
     * Instantiate the new graph instead. Nor is an update between graphs of different
     * {@linkplain CaptureArena capture arenas} (or of an arena and none):
     * {@link GraphUpdateResult#ARENA_CHANGED}, since the executable's replays are ordered by its arena.
     *
     * @param graph a graph of this executable's context
     * @return {@link GraphUpdateResult#APPLIED}, or why the update was refused; this executable
     *     is then unchanged
     * @throws IllegalArgumentException when {@code graph} is a conditional node's body (update to
     *     the graph that holds the node)
     * @throws IllegalStateException for what {@link Graph#instantiate()} refuses in {@code graph}
     *     (a conditional body without nodes, an unused conditional handle)
     * @throws CudaException when the driver fails otherwise; the update may have been applied
     *     all the same, so this executable then holds the buffers and modules of both graphs
     */
    public GraphUpdateResult tryUpdate(Graph graph) {
        return tryUpdateExplained(graph).result();
    }

    /**
     * As {@link #tryUpdate(Graph)}, and says where the driver found the graphs to differ: the
     * nodes its {@code CUgraphExecUpdateResultInfo} names (the new graph's node and the one it
     * was compared with), by type and position. A JFR event {@code dev.gatun.GraphUpdate} carries
     * the same.
     *
     * @param graph a graph of this executable's context
     * @return the result and the nodes at fault; this executable is unchanged unless it was applied
     * @throws IllegalArgumentException as {@link #tryUpdate(Graph)}
     * @throws IllegalStateException as {@link #tryUpdate(Graph)}
     * @throws CudaException as {@link #tryUpdate(Graph)}
     */
    public GraphUpdateReport tryUpdateExplained(Graph graph) {
        resource.checkOpen();
        context.checkSame(graph.context(), "the graph");
        if (graph.isBody()) {
            throw new IllegalArgumentException(graph + " is a conditional node's body, which runs only as part of "
                    + "the graph that holds the node; update to that graph");
        }
        Graph.Resource next = graph.resource();
        next.checkOpen();
        synchronized (next.building) {
            next.checkConditionals(); // what instantiate refuses, the driver's update would too
        }
        GraphUpdateEvent event = GraphUpdateEvent.start();
        GraphUpdateReport report = REFUSED_BY_FAILURE;
        try {
            // Memory nodes: see above; no driver call.
            if (resource.memory != null || next.memory != null) {
                report = MEMORY_NODES;
            } else if (resource.arena != next.arena) {
                report = ARENA_CHANGED;
            } else {
                GraphCalls.UpdateOutcome outcome = updateLocked(next);
                GraphUpdateResult result = GraphUpdateResult.ofDriver(outcome.result());
                report = result.applied() ? APPLIED : new GraphUpdateReport(result,
                        describe(outcome.errorNode(), next, "the new graph"),
                        describe(outcome.errorFromNode(), resource.origin, "the executable's graph"));
            }
            return report;
        } finally {
            if (event != null) {
                event.device = context.device().ordinal();
                event.updated = report.applied();
                event.result = report.result().name();
                event.errorNode = report.errorNode();
                event.errorFromNode = report.errorFromNode();
                event.commit();
            }
        }
    }

    private static final GraphUpdateReport APPLIED = GraphUpdateReport.of(GraphUpdateResult.APPLIED);
    private static final GraphUpdateReport MEMORY_NODES = GraphUpdateReport.of(GraphUpdateResult.MEMORY_NODES);
    private static final GraphUpdateReport ARENA_CHANGED = GraphUpdateReport.of(GraphUpdateResult.ARENA_CHANGED);
    /** What the JFR event says when the driver failed (the exception says why). */
    private static final GraphUpdateReport REFUSED_BY_FAILURE = GraphUpdateReport.of(GraphUpdateResult.REFUSED);

    /**
     * {@code node} (null handle: none) of {@code graph} in words: its type and position in the
     * graph's node list. A refusal is cold: two driver queries do not matter, and a failure of
     * theirs leaves the result as the driver gave it, with the node described by its handle.
     */
    private String describe(MemorySegment node, Graph.Resource graph, String which) {
        if (node.address() == 0) {
            return null;
        }
        try (Arena arena = Arena.ofConfined()) {
            int driverType = calls.nodeType(node);
            GraphNode.Kind kind = GraphNode.kindOfDriverType(driverType);
            String type = kind == null ? "type-" + driverType : kind.name().toLowerCase(Locale.ROOT).replace('_', ' ');
            MemorySegment nodes;
            synchronized (graph.building) { // no node is added while the list is read
                nodes = calls.nodes(graph.handle, arena);
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

    private GraphCalls.UpdateOutcome updateLocked(Graph.Resource next) {
        next.hold();
        Graph.Resource released = next; // the hold dropped after the lock (a drop may retire, which takes stream locks)
        try {
            synchronized (resource.lock) {
                GraphCalls.UpdateOutcome result;
                try {
                    result = calls.update(resource.handle, next.handle);
                } catch (RuntimeException e) {
                    // The driver may have applied the update before it failed (the outcome is
                    // uncertain): later launches may run either graph's kernels and addresses, so
                    // this executable holds the buffers and modules of both until it is destroyed.
                    resource.holds.addAll(next.holds);
                    throw e;
                }
                if (result.result() != CudaDriver.CU_GRAPH_EXEC_UPDATE_SUCCESS()) {
                    return result;
                }
                resource.holds.addAll(next.holds); // it now runs that graph's kernels and addresses
                released = resource.current; // launches before the update ran it; this executable holds what it baked in
                resource.current = next;
                return result;
            }
        } finally {
            released.unhold();
        }
    }

    /**
     * Points one kernel node at a new argument block, for the launches made after this call:
     * the {@code occurrence}-th node (0-based, in the driver's node order) that launches
     * {@code arguments}' kernel takes {@code arguments}' argument values, and keeps the grid,
     * block and shared memory of the graph this executable runs now. This executable then holds
     * the buffers the new arguments name. Works the same after any number of in-place updates.
     *
     * @param occurrence which of the nodes that launch the kernel, counted from 0
     * @param arguments the kernel and its new argument values
     * @throws IllegalArgumentException when no such node exists
     */
    public void updateKernelNode(int occurrence, KernelLaunch arguments) {
        resource.checkOpen();
        if (occurrence < 0) {
            throw new IllegalArgumentException("occurrence is 0-based and must not be negative: " + occurrence);
        }
        Kernel kernel = arguments.kernel();
        context.checkSame(kernel.context(), "the kernel");
        MemorySegment function = kernel.function();
        synchronized (resource.lock) {
            resource.checkOpen();
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment params = CUDA_KERNEL_NODE_PARAMS_v2_st.allocate(arena);
                MemorySegment node = KernelNodes.find(calls, resource.current.handle, resource.origin.handle, function,
                        occurrence, params, arena, kernel.name());
                CUDA_KERNEL_NODE_PARAMS_v2_st.kernelParams(params, arguments.params().kernelParams());
                CUDA_KERNEL_NODE_PARAMS_v2_st.extra(params, MemorySegment.NULL);
                resource.holds.addAll(arguments.argumentOwners()); // before the node can use them
                calls.setKernelNodeParams(resource.handle, node, params);
            }
        }
    }

    /**
     * Enables or disables {@code node} for the launches made after this call
     * ({@code cuGraphNodeSetEnabled}): a disabled node does nothing, and the nodes after it still
     * wait for its dependencies. {@code node} is a node of the graph this executable was
     * instantiated from, added before it was; after an in-place {@linkplain #update update} it
     * addresses the node in the same position of the graph this executable runs now.
     *
     * @param node the node to switch, of the graph this executable was instantiated from
     * @param enabled false to make the node do nothing, true to make it run again
     * @throws IllegalArgumentException when {@code node} is of another graph or inside a
     *     conditional node's body, was added after this executable was instantiated, or is an
     *     event or conditional node (the driver enables and disables only kernel, memset and copy
     *     nodes)
     */
    public void setEnabled(GraphNode node, boolean enabled) {
        checkOwnNode(node);
        if (isEventNode(node)) {
            throw new IllegalArgumentException(node + " is an event node, and the driver enables and disables only "
                    + "kernel, memset and copy nodes; point it at another event with setEvent, or build the graph "
                    + "without it");
        }
        if (node.kind() == GraphNode.Kind.CONDITIONAL) {
            throw new IllegalArgumentException(node + " is a conditional node, and the driver enables and disables "
                    + "only kernel, memset and copy nodes; let its handle's value skip its body instead");
        }
        synchronized (resource.lock) {
            resource.checkOpen();
            building.setEnabled(resource.handle, node.handle(), enabled);
        }
    }

    /**
     * Sets kernel node {@code node} to launch {@code launch}'s kernel with its configuration and
     * argument values, for the launches made after this call ({@code cuGraphExecKernelNodeSetParams}).
     * This executable then holds the kernel's module and the buffers the arguments name. The
     * graph the node belongs to is unchanged. {@code node} is addressed as in {@link #setEnabled}.
     *
     * @param node the kernel node to change
     * @param launch the kernel, configuration and argument values the node launches from now on
     * @throws IllegalArgumentException when {@code node} is not a kernel node, is of another graph
     *     or was added after this executable was instantiated; for a cooperative or clustered
     *     launch, or a kernel of another context
     */
    public void setKernelNode(GraphNode node, KernelLaunch launch) {
        checkOwnNode(node);
        if (node.kind() != GraphNode.Kind.KERNEL) {
            throw new IllegalArgumentException(node + " is not a kernel node; only a kernel node takes a launch");
        }
        List<NativeResource> buffers = launch.checkedArgumentOwnersFor(context);
        Kernel kernel = launch.kernel();
        MemorySegment function = kernel.function();
        synchronized (resource.lock) {
            resource.checkOpen();
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment params = KernelNodes.params(function, launch.config(), launch.params().kernelParams(), arena);
                resource.holds.add(kernel.module()); // before the node can use them
                resource.holds.addAll(buffers);
                calls.setKernelNodeParams(resource.handle, node.handle(), params);
            }
        }
    }

    /**
     * Sets event record or event wait node {@code node} to record, or wait for, {@code event}
     * instead, for the launches made after this call ({@code cuGraphExecEventRecordNodeSetEvent},
     * {@code cuGraphExecEventWaitNodeSetEvent}). This executable then holds {@code event}; the
     * graph the node belongs to is unchanged. {@code node} is addressed as in {@link #setEnabled}.
     *
     * @param node the event record or event wait node to change
     * @param event the event the node records or waits for from now on
     * @throws IllegalArgumentException when {@code node} is not an event node, is of another graph
     *     or was added after this executable was instantiated, or {@code event} is of another context
     * @throws IllegalStateException when this executable or {@code event} is closed
     */
    public void setEvent(GraphNode node, Event event) {
        checkOwnNode(node);
        if (!isEventNode(node)) {
            throw new IllegalArgumentException(node + " is not an event node; only an event record or event wait node "
                    + "takes an event");
        }
        NativeResource owner = event.checkedOwnerFor(context, "the event of " + node);
        synchronized (resource.lock) {
            resource.checkOpen();
            resource.holds.add(owner); // before the node can name it
            if (node.kind() == GraphNode.Kind.EVENT_RECORD) {
                building.setRecordEvent(resource.handle, node.handle(), event.handle());
            } else {
                building.setWaitEvent(resource.handle, node.handle(), event.handle());
            }
        }
    }

    private static boolean isEventNode(GraphNode node) {
        return node.kind() == GraphNode.Kind.EVENT_RECORD || node.kind() == GraphNode.Kind.EVENT_WAIT;
    }

    /** Checks that this executable is open and has {@code node} (see {@link #setEnabled}). */
    private void checkOwnNode(GraphNode node) {
        resource.checkOpen();
        if (node.graph().isBody()) {
            throw new IllegalArgumentException(node + " is in " + node.graph() + "; nodes of conditional bodies "
                    + "cannot be changed one by one in an executable: change the body and instantiate again");
        }
        if (node.graph().resource() != resource.origin) {
            throw new IllegalArgumentException(node + " is not a node of the graph this executable was instantiated "
                    + "from; pass a node of that graph");
        }
        if (node.isRemoved()) {
            throw new IllegalArgumentException(node + " was removed from its graph; this executable still runs its copy, "
                    + "but the driver addresses it only through the graph's node: instantiate the graph again");
        }
        if (node.index() >= resource.nodes) {
            throw new IllegalArgumentException(node + " was added after this executable was instantiated, so it has "
                    + "no such node; instantiate the graph again");
        }
    }
}
