package dev.gatun.cuda;

import dev.gatun.cuda.internal.graph.Node;

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

    /** What a node does: the driver's node types ({@code CUgraphNodeType}), as {@link Graph#nodes()} lists them. */
    public enum Kind {
        /** Launches a kernel ({@link Graph#addKernel}). */
        KERNEL,
        /** Sets memory to a value ({@link Graph#addMemset}, {@link Graph#addFill}). */
        MEMSET,
        /** Copies memory: device to device ({@link Graph#addCopy}), host to device or back ({@link Graph#addUpload}, {@link Graph#addDownload}). */
        COPY,
        /** Records an event ({@link Graph#addEventRecord}). */
        EVENT_RECORD,
        /** Waits for an event ({@link Graph#addEventWait}). */
        EVENT_WAIT,
        /** An IF, WHILE or SWITCH node ({@link ConditionalNode}). */
        CONDITIONAL,
        /** Writes and waits on words ({@link Graph#addBatchMemOps}). */
        BATCH_MEM_OP,
        /** Runs a Java callback on the host ({@link Graph#addHost}, or {@link Stream#launchHostFunction} in a capture). */
        HOST,
        /** Runs a copy of another graph ({@link Graph#addChild}). */
        CHILD_GRAPH,
        /** Does nothing; orders the nodes around it (made by captures that join streams). */
        EMPTY,
        /** Allocates memory ({@link Stream#allocate} inside a capture). */
        MEMORY_ALLOCATION,
        /** Frees memory allocated in the graph (closing such a buffer inside the capture). */
        MEMORY_FREE,
        /** Signals external semaphores; Gatun adds none, but a graph may hold one. */
        EXTERNAL_SEMAPHORE_SIGNAL,
        /** Waits on external semaphores; Gatun adds none, but a graph may hold one. */
        EXTERNAL_SEMAPHORE_WAIT
    }

    private final Graph graph;
    private final Node node;
    private final Kind kind;

    /** The face of {@code node}, a node of {@code graph}'s builder (one per node: the graph keeps it). */
    GraphNode(Graph graph, Node node) {
        this.graph = graph;
        this.node = node;
        this.kind = Kind.valueOf(node.kind().name());
    }

    /** The wing's nodes of {@code nodes}, in order; null where a node is null (the builder refuses it), or for a null array. */
    static Node[] nodesOf(GraphNode[] nodes) {
        if (nodes == null) {
            return null;
        }
        Node[] of = new Node[nodes.length];
        for (int i = 0; i < nodes.length; i++) {
            of[i] = nodeOf(nodes[i]);
        }
        return of;
    }

    /** The wing's node of {@code node}, or null for null (the wing refuses it). */
    static Node nodeOf(GraphNode node) {
        return node == null ? null : node.node;
    }

    /** {@return the graph this node belongs to} */
    public Graph graph() {
        return graph;
    }

    /** {@return what the node does} */
    public Kind kind() {
        return kind;
    }

    /**
     * {@return its position among the nodes added to its graph by hand, from 0; -1 for a node
     * {@link Graph#nodes()} found that no add method of this graph made (a captured one)}
     */
    public int index() {
        return node.index();
    }

    /** {@return whether it was removed from its graph ({@link Graph#remove})} */
    public boolean isRemoved() {
        return node.isRemoved();
    }

    /** The node as the graph wing knows it. */
    Node node() {
        return node;
    }

    @Override
    public String toString() {
        return node.toString();
    }
}
