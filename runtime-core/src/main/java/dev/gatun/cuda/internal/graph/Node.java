package dev.gatun.cuda.internal.graph;

import java.lang.foreign.MemorySegment;

/**
 * One node of a graph or body, as the wing knows it (a public {@code GraphNode} is its face): the
 * driver's handle, its kind, its position among the nodes added by hand (-1 for one a listing
 * found), and whether it was removed. One per handle of its graph ({@link NodeBuilder#nodes()}
 * gives a node added by hand as itself).
 */
public final class Node {

    private final NodeBuilder graph;
    private final MemorySegment handle;
    private final NodeKind kind;
    private final int index;
    /** Set once {@link NodeBuilder#remove} destroyed it: the driver no longer knows its handle. */
    private volatile boolean removed;

    Node(NodeBuilder graph, MemorySegment handle, NodeKind kind, int index) {
        this.graph = graph;
        this.handle = handle;
        this.kind = kind;
        this.index = index;
    }

    /** The graph or body it belongs to. */
    public NodeBuilder graph() {
        return graph;
    }

    public MemorySegment handle() {
        return handle;
    }

    public NodeKind kind() {
        return kind;
    }

    public int index() {
        return index;
    }

    public boolean isRemoved() {
        return removed;
    }

    void markRemoved() {
        removed = true;
    }

    /** As the public {@code GraphNode} names it: its kind, position and graph. */
    @Override
    public String toString() {
        return kind + (index < 0 ? " node (not added by hand)" : " node " + index) + " of " + graph.name()
                + (removed ? " (removed)" : "");
    }
}
