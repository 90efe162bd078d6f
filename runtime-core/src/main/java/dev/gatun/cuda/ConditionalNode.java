package dev.gatun.cuda;

import dev.gatun.cuda.internal.driver.ConditionalCalls;
import java.util.List;

/**
 * A conditional node of a {@link Graph} ({@link Graph#addIf}, {@link Graph#addIfElse},
 * {@link Graph#addWhile}, {@link Graph#addSwitch}): the {@link GraphNode} later nodes name as a
 * dependency, and the body graphs the driver created for it, which run according to its
 * {@link ConditionalHandle}'s value when the node is reached.
 *
 * <p>Each body is a {@link Graph} view, built with the same add methods as any graph (a body may
 * hold conditional nodes of its own). The graph that holds the node owns its bodies: they are
 * destroyed with it, closing a body only closes the view, and a body is instantiated only as
 * part of that graph. Every body needs at least one node before that graph is instantiated.
 */
public final class ConditionalNode {

    /** How the node reads its handle's value. */
    public enum Type {
        /** Runs its body once when the value is not 0; with an ELSE body, that one when it is 0. */
        IF,
        /** Runs its body while the value is not 0, checked before each run: a body kernel must end the loop. */
        WHILE,
        /** Runs body number {@code value}; none when the value is not below the number of bodies. */
        SWITCH;

        /** {@return the driver's {@code CU_GRAPH_COND_TYPE_*} of this type} */
        int driverType() {
            return switch (this) {
                case IF -> ConditionalCalls.IF;
                case WHILE -> ConditionalCalls.WHILE;
                case SWITCH -> ConditionalCalls.SWITCH;
            };
        }
    }

    private final GraphNode node;
    private final Type type;
    private final ConditionalHandle handle;
    private final List<Graph> bodies;

    ConditionalNode(GraphNode node, Type type, ConditionalHandle handle, List<Graph> bodies) {
        this.node = node;
        this.type = type;
        this.handle = handle;
        this.bodies = List.copyOf(bodies);
    }

    /** {@return the node itself, to name as a dependency} */
    public GraphNode node() {
        return node;
    }

    /** {@return how the node reads its handle's value: IF (with or without ELSE), WHILE or SWITCH} */
    public Type type() {
        return type;
    }

    /** {@return the handle whose value decides which body runs} */
    public ConditionalHandle handle() {
        return handle;
    }

    /** {@return the first body: what IF and WHILE run, case 0 of a SWITCH} */
    public Graph body() {
        return bodies.get(0);
    }

    /** {@return every body, in order: for IF/ELSE the IF body then the ELSE body; for SWITCH case 0, 1, ...} */
    public List<Graph> bodies() {
        return bodies;
    }

    @Override
    public String toString() {
        return type + " " + node;
    }
}
