package dev.gatun.cuda.internal.graph;

import dev.gatun.cuda.internal.driver.ConditionalCalls;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * Conditional handles and nodes, for a graph built by hand and for a capture in progress: a
 * handle no node uses yet is listed in its graph (which refuses instantiation until one does);
 * a node's bodies become {@link NodeBuilder}s of their own, listed in the graph that holds them.
 * Types are the driver's {@code CU_GRAPH_COND_TYPE_*} ({@link ConditionalCalls#IF} and the others).
 */
public final class Conditionals {

    private Conditionals() {
    }

    /** A conditional node just added, and the builders of its bodies, in order. */
    public record Added(Node node, List<NodeBuilder> bodies) {
    }

    /**
     * {@return a new conditional handle of {@code graph} ({@code cuGraphConditionalHandleCreate}),
     * listed as unused until a node uses it}
     */
    public static long createHandle(NodeBuilder graph, int defaultValue, boolean assignEachLaunch) {
        GraphState g = graph.graph();
        synchronized (g.building) {
            long value = calls(graph).createHandle(graph.handle(), defaultValue, assignEachLaunch);
            g.unusedHandles.put(value, describeHandle(value, graph.name(), defaultValue, assignEachLaunch));
            return value;
        }
    }

    /** How the public {@code ConditionalHandle} names itself (and a graph's refusal names it). */
    public static String describeHandle(long value, String graph, int defaultValue, boolean assignedEachLaunch) {
        return "ConditionalHandle 0x" + Long.toHexString(value) + " of " + graph
                + (assignedEachLaunch ? " (each launch starts at " + Integer.toUnsignedString(defaultValue) + ")"
                        : " (set by kernels)");
    }

    /**
     * Adds a conditional node of {@code type} with {@code bodies} bodies that reads {@code handle}
     * (checked to be of {@code graph} or of a graph it is a body of) after {@code dependencies}.
     *
     * @throws dev.gatun.cuda.DriverTooOldException on a driver without such nodes, before any call
     */
    public static Added add(NodeBuilder graph, Node[] dependencies, long handle, int type, int bodies) {
        calls(graph).requireNode(type, bodies);
        synchronized (graph.graph().building) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment deps = graph.dependencies(dependencies, arena);
                return added(graph, calls(graph).addConditional(graph.handle(), deps, handle, type, bodies, arena),
                        handle, type, bodies);
            }
        }
    }

    /**
     * Adds a conditional node to {@code graph}, which the capture on {@code stream} records into,
     * after the capture's current dependencies ({@code info}, read just before under the stream's
     * lock, which the caller still holds), and makes it the capture's only dependency, so the work
     * captured next runs after it. When that last step fails, the graph is marked unusable: the
     * work captured after the node would not wait for it.
     */
    public static Added addToCapture(NodeBuilder graph, ConditionalCalls.CaptureInfo info, MemorySegment stream,
            long handle, int type, int bodies) {
        calls(graph).requireNode(type, bodies);
        GraphState g = graph.graph();
        synchronized (g.building) {
            try (Arena arena = Arena.ofConfined()) {
                Added added = added(graph, calls(graph).addConditional(graph.handle(), info.dependencies(),
                        info.edgeData(), info.count(), handle, type, bodies, arena), handle, type, bodies);
                try {
                    calls(graph).setCaptureDependency(stream, added.node().handle());
                } catch (RuntimeException e) {
                    // The node is in the graph, but work captured from now on would not wait for it.
                    g.unusable = typeName(type) + " " + added.node() + " was added to the capture, but could not be "
                            + "made the capture's dependency (" + e.getMessage() + "), so the work captured after it "
                            + "does not wait for it: abort the capture and capture again";
                    throw e;
                }
                return added;
            }
        }
    }

    /** The conditional node the driver just added, with builders of its bodies (under the building lock). */
    private static Added added(NodeBuilder graph, ConditionalCalls.AddedConditional made, long handle, int type,
            int bodies) {
        GraphState g = graph.graph();
        g.unusedHandles.remove(handle);
        Node node = graph.added(made.node(), NodeKind.CONDITIONAL, List.of());
        List<NodeBuilder> builders = new ArrayList<>(bodies);
        for (int i = 0; i < bodies; i++) {
            GraphState.Body b = new GraphState.Body(bodyName(type, bodies, i) + " of " + node);
            g.bodies.add(b);
            builders.add(new NodeBuilder(g, made.bodies().get(i), b));
        }
        return new Added(node, builders);
    }

    private static String bodyName(int type, int bodies, int i) {
        if (type == ConditionalCalls.IF) {
            return i == 0 ? "the IF body" : "the ELSE body";
        }
        return type == ConditionalCalls.WHILE ? "the WHILE body" : "case " + i + " of " + bodies;
    }

    /** The public name of a node's type, as {@code ConditionalNode} prints it. */
    private static String typeName(int type) {
        return type == ConditionalCalls.IF ? "IF" : type == ConditionalCalls.WHILE ? "WHILE" : "SWITCH";
    }

    private static ConditionalCalls calls(NodeBuilder graph) {
        return graph.graph().context().calls().conditionals();
    }
}
