package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.StreamState;
import dev.gatun.cuda.internal.events.GraphUpdateEvent;
import dev.gatun.cuda.internal.graph.ExecState;
import dev.gatun.cuda.internal.graph.ExecUpdates;
import dev.gatun.cuda.internal.graph.GraphState;
import java.util.List;

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

    private final CudaContext context;
    private final ExecState exec;

    /** The face of {@code exec}, an executable of a graph of {@code context}. */
    GraphExec(CudaContext context, ExecState exec) {
        super(exec);
        this.context = context;
        this.exec = exec;
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
        exec.launch(checked(stream));
    }

    /**
     * {@return how many launches of this executable the driver accepted} Counted under the lock
     * each launch takes anyway (no atomic update); a read may lag a launch in progress on another
     * thread, and never goes down.
     */
    public long launches() {
        return exec.launches();
    }

    /**
     * Uploads this executable to the device in {@code stream}'s order, so that its first launch
     * does not pay for it.
     *
     * @param stream a stream of this executable's context
     */
    public void upload(Stream stream) {
        exec.upload(checked(stream));
    }

    /** Checks this executable and {@code stream}. */
    private StreamState checked(Stream stream) {
        exec.checkOpen();
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
        return tryUpdate(graph).isApplied();
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
        exec.checkOpen();
        context.checkSame(graph.context(), "the graph");
        GraphState next = ExecUpdates.updatable(graph.builder());
        GraphUpdateEvent event = GraphUpdateEvent.start();
        GraphUpdateReport report = REFUSED_BY_FAILURE;
        try {
            report = report(ExecUpdates.update(exec, next));
            return report;
        } finally {
            if (event != null) {
                event.device = context.device().ordinal();
                event.updated = report.isApplied();
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

    private static GraphUpdateReport report(ExecUpdates.Outcome outcome) {
        if (outcome == ExecUpdates.MEMORY_NODES) {
            return MEMORY_NODES;
        }
        if (outcome == ExecUpdates.ARENA_CHANGED) {
            return ARENA_CHANGED;
        }
        GraphUpdateResult result = GraphUpdateResult.ofDriver(outcome.result());
        return result.isApplied() ? APPLIED : new GraphUpdateReport(result, outcome.errorNode(), outcome.errorFromNode());
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
        exec.checkOpen();
        if (occurrence < 0) {
            throw new IllegalArgumentException("occurrence is 0-based and must not be negative: " + occurrence);
        }
        Kernel kernel = arguments.kernel();
        context.checkSame(kernel.context(), "the kernel");
        ExecUpdates.updateKernelNode(exec, occurrence, kernel.function(), kernel.name(),
                arguments.params().kernelParams(), arguments.argumentOwners());
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
        ExecUpdates.setEnabled(exec, node.node(), enabled);
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
        ExecUpdates.setKernelNode(exec, node.node(), kernel.function(), launch.config(),
                launch.params().kernelParams(), kernel.module(), buffers);
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
        ExecUpdates.setEvent(exec, node.node(), owner, event.handle());
    }

    private static boolean isEventNode(GraphNode node) {
        return node.kind() == GraphNode.Kind.EVENT_RECORD || node.kind() == GraphNode.Kind.EVENT_WAIT;
    }

    /** Checks that this executable is open and has {@code node} (see {@link #setEnabled}). */
    private void checkOwnNode(GraphNode node) {
        exec.checkOpen();
        ExecUpdates.checkOwnNode(exec, node.node());
    }
}
