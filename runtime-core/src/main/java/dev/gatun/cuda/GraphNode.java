package dev.gatun.cuda;

import dev.gatun.cuda.bindings.driver.CudaDriver;

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

    /** The kind of a {@code CU_GRAPH_NODE_TYPE_*}; null for a type this version does not know. */
    static Kind kindOfDriverType(int type) {
        Kind[] byType = {
            Kind.KERNEL, Kind.COPY, Kind.MEMSET, Kind.HOST,
            Kind.CHILD_GRAPH, Kind.EMPTY, Kind.EVENT_WAIT, Kind.EVENT_RECORD,
            Kind.EXTERNAL_SEMAPHORE_SIGNAL, Kind.EXTERNAL_SEMAPHORE_WAIT,
            Kind.MEMORY_ALLOCATION, Kind.MEMORY_FREE, Kind.BATCH_MEM_OP,
            Kind.CONDITIONAL};
        int[] types = {
            CudaDriver.CU_GRAPH_NODE_TYPE_KERNEL(), CudaDriver.CU_GRAPH_NODE_TYPE_MEMCPY(),
            CudaDriver.CU_GRAPH_NODE_TYPE_MEMSET(), CudaDriver.CU_GRAPH_NODE_TYPE_HOST(),
            CudaDriver.CU_GRAPH_NODE_TYPE_GRAPH(), CudaDriver.CU_GRAPH_NODE_TYPE_EMPTY(),
            CudaDriver.CU_GRAPH_NODE_TYPE_WAIT_EVENT(), CudaDriver.CU_GRAPH_NODE_TYPE_EVENT_RECORD(),
            CudaDriver.CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL(), CudaDriver.CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT(),
            CudaDriver.CU_GRAPH_NODE_TYPE_MEM_ALLOC(), CudaDriver.CU_GRAPH_NODE_TYPE_MEM_FREE(),
            CudaDriver.CU_GRAPH_NODE_TYPE_BATCH_MEM_OP(), CudaDriver.CU_GRAPH_NODE_TYPE_CONDITIONAL()};
        for (int i = 0; i < types.length; i++) {
            if (types[i] == type) {
                return byType[i];
            }
        }
        return null;
    }

    private final Graph graph;
    private final MemorySegment handle;
    private final Kind kind;
    private final int index;
    /** Set once {@link Graph#remove} destroyed it: the driver no longer knows its handle. */
    private volatile boolean removed;

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

    /**
     * {@return its position among the nodes added to its graph by hand, from 0; -1 for a node
     * {@link Graph#nodes()} found that no add method of this graph made (a captured one)}
     */
    public int index() {
        return index;
    }

    /** {@return whether it was removed from its graph ({@link Graph#remove})} */
    public boolean isRemoved() {
        return removed;
    }

    void markRemoved() {
        removed = true;
    }

    MemorySegment handle() {
        return handle;
    }

    @Override
    public String toString() {
        return kind + (index < 0 ? " node (not added by hand)" : " node " + index) + " of " + graph
                + (removed ? " (removed)" : "");
    }
}
