package dev.gatun.cuda.internal.graph;

import dev.gatun.cuda.bindings.driver.CudaDriver;

/**
 * What a node does: the driver's node types ({@code CUgraphNodeType}). The public
 * {@code GraphNode.Kind} has the same constants, by name.
 */
public enum NodeKind {
    KERNEL(CudaDriver.CU_GRAPH_NODE_TYPE_KERNEL()),
    MEMSET(CudaDriver.CU_GRAPH_NODE_TYPE_MEMSET()),
    COPY(CudaDriver.CU_GRAPH_NODE_TYPE_MEMCPY()),
    EVENT_RECORD(CudaDriver.CU_GRAPH_NODE_TYPE_EVENT_RECORD()),
    EVENT_WAIT(CudaDriver.CU_GRAPH_NODE_TYPE_WAIT_EVENT()),
    CONDITIONAL(CudaDriver.CU_GRAPH_NODE_TYPE_CONDITIONAL()),
    BATCH_MEM_OP(CudaDriver.CU_GRAPH_NODE_TYPE_BATCH_MEM_OP()),
    HOST(CudaDriver.CU_GRAPH_NODE_TYPE_HOST()),
    CHILD_GRAPH(CudaDriver.CU_GRAPH_NODE_TYPE_GRAPH()),
    EMPTY(CudaDriver.CU_GRAPH_NODE_TYPE_EMPTY()),
    MEMORY_ALLOCATION(CudaDriver.CU_GRAPH_NODE_TYPE_MEM_ALLOC()),
    MEMORY_FREE(CudaDriver.CU_GRAPH_NODE_TYPE_MEM_FREE()),
    EXTERNAL_SEMAPHORE_SIGNAL(CudaDriver.CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL()),
    EXTERNAL_SEMAPHORE_WAIT(CudaDriver.CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT());

    private final int driverType;

    NodeKind(int driverType) {
        this.driverType = driverType;
    }

    /** The kind of a {@code CU_GRAPH_NODE_TYPE_*}; null for a type this version does not know. */
    public static NodeKind ofDriverType(int type) {
        for (NodeKind k : values()) {
            if (k.driverType == type) {
                return k;
            }
        }
        return null;
    }
}
