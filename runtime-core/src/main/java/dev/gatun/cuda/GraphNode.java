package dev.gatun.cuda;

import java.lang.foreign.MemorySegment;

/**
 * One node of a {@link Graph} built node by node ({@link Graph#addKernel}, {@link Graph#addMemset},
 * {@link Graph#addFill}, {@link Graph#addCopy}, {@link Graph#addEventRecord},
 * {@link Graph#addEventWait}, a conditional node's {@link ConditionalNode#node()}): what later
 * nodes name as a dependency, and what {@link GraphExec#setEnabled} and the other node updates
 * address in an executable made from that graph (a node inside a conditional node's body cannot
 * be addressed so).
 *
 * <p>A value without a lifecycle of its own: it is valid as long as its graph. A node belongs to
 * exactly one graph; a {@linkplain Graph#copy() copy} of the graph has nodes of its own.
 */
public final class GraphNode {

    /** What a node does, for messages and {@link #toString()}. */
    public enum Kind {
        /** Launches a kernel ({@link Graph#addKernel}). */
        KERNEL,
        /** Sets memory to a value ({@link Graph#addMemset}, {@link Graph#addFill}). */
        MEMSET,
        /** Copies device to device ({@link Graph#addCopy}). */
        COPY,
        /** Records an event ({@link Graph#addEventRecord}). */
        EVENT_RECORD,
        /** Waits for an event ({@link Graph#addEventWait}). */
        EVENT_WAIT,
        /** An IF, WHILE or SWITCH node ({@link ConditionalNode}). */
        CONDITIONAL,
        /** Writes and waits on words ({@link Graph#addBatchMemOps}). */
        BATCH_MEM_OP
    }

    private final Graph graph;
    private final MemorySegment handle;
    private final Kind kind;
    private final int index;

    GraphNode(Graph graph, MemorySegment handle, Kind kind, int index) {
        this.graph = graph;
        this.handle = handle;
        this.kind = kind;
        this.index = index;
    }

    /** {@return the graph this node belongs to} */
    public Graph graph() {
        return graph;
    }

    /** {@return what the node does} */
    public Kind kind() {
        return kind;
    }

    /** {@return its position among the nodes added to its graph by hand, from 0} */
    public int index() {
        return index;
    }

    MemorySegment handle() {
        return handle;
    }

    @Override
    public String toString() {
        return kind + " node " + index + " of " + graph;
    }
}
