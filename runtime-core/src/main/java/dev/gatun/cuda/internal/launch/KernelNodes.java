package dev.gatun.cuda.internal.launch;

import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.bindings.driver.CUDA_KERNEL_NODE_PARAMS_v2_st;
import dev.gatun.cuda.internal.driver.GraphCalls;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Describes kernel nodes ({@link #params}), and finds the node of an executable that a
 * kernel-node update addresses ({@link #find}).
 *
 * <p>The node is looked up in the graph the executable runs now, whose description (function,
 * dimensions, shared memory) is what it launches. The driver, however, names an executable's
 * nodes by the nodes of the graph it was instantiated from (its origin), and refuses any other
 * node. After an in-place update the two graphs are paired by position: cuGraphExecUpdate
 * succeeded only because they have the same topology with nodes created in the same order, and
 * it pairs nodes in that order, the order in which cuGraphGetNodes lists them (observed, not
 * documented: {@link #originNode} checks what it can of the pair).
 */
public final class KernelNodes {

    private KernelNodes() {
    }

    /**
     * A {@code CUDA_KERNEL_NODE_PARAMS_v2}, allocated in {@code arena}, that launches
     * {@code function} with {@code config} and the argument array {@code kernelParams} (whose
     * values the driver copies when it takes the description).
     *
     * @throws IllegalArgumentException for a cooperative configuration or one with launch
     *     attributes (cluster, programmatic stream serialization, scheduling policy, priority,
     *     events), which a kernel node of this form cannot carry
     */
    public static MemorySegment params(MemorySegment function, LaunchConfig config, MemorySegment kernelParams,
            Arena arena) {
        if (config.programmaticEvent().isPresent() || config.launchCompletionEvent().isPresent()) {
            throw new IllegalArgumentException("a kernel node carries grid, block and shared memory only, not a launch "
                    + "attribute's event; prepare the launch without it and add an event record node after the kernel "
                    + "node (Graph.addEventRecord), or capture the launch on a stream instead (StreamCapture)");
        }
        if (config.isCooperative() || config.hasExtendedAttributes()) {
            throw new IllegalArgumentException("a kernel node carries grid, block and shared memory only, not a "
                    + (config.isCooperative() ? "cooperative launch" : config.hasCluster() ? "cluster" : "launch attribute")
                    + "; capture that launch on a stream "
                    + "instead (StreamCapture), or prepare it without");
        }
        MemorySegment params = CUDA_KERNEL_NODE_PARAMS_v2_st.allocate(arena);
        CUDA_KERNEL_NODE_PARAMS_v2_st.func(params, function);
        CUDA_KERNEL_NODE_PARAMS_v2_st.gridDimX(params, config.gridX());
        CUDA_KERNEL_NODE_PARAMS_v2_st.gridDimY(params, config.gridY());
        CUDA_KERNEL_NODE_PARAMS_v2_st.gridDimZ(params, config.gridZ());
        CUDA_KERNEL_NODE_PARAMS_v2_st.blockDimX(params, config.blockX());
        CUDA_KERNEL_NODE_PARAMS_v2_st.blockDimY(params, config.blockY());
        CUDA_KERNEL_NODE_PARAMS_v2_st.blockDimZ(params, config.blockZ());
        CUDA_KERNEL_NODE_PARAMS_v2_st.sharedMemBytes(params, config.sharedMemoryBytes());
        CUDA_KERNEL_NODE_PARAMS_v2_st.kernelParams(params, kernelParams);
        CUDA_KERNEL_NODE_PARAMS_v2_st.extra(params, MemorySegment.NULL);
        return params;
    }

    /**
     * The node to address for the {@code occurrence}-th kernel node of graph {@code current}
     * that launches {@code function}, with that node's description written into {@code params}.
     *
     * @param origin the graph the executable was instantiated from (maybe {@code current} itself)
     * @throws IllegalArgumentException when {@code current} has no such node
     */
    public static MemorySegment find(GraphCalls calls, MemorySegment current, MemorySegment origin, MemorySegment function,
            int occurrence, MemorySegment params, Arena arena, String kernelName) {
        MemorySegment nodes = calls.nodes(current, arena);
        long count = nodes.byteSize() / ValueLayout.ADDRESS.byteSize();
        int seen = 0;
        for (long i = 0; i < count; i++) {
            MemorySegment node = nodes.getAtIndex(ValueLayout.ADDRESS, i);
            if (!calls.isKernelNode(node)) {
                continue;
            }
            calls.kernelNodeParams(node, params);
            if (CUDA_KERNEL_NODE_PARAMS_v2_st.func(params).address() != function.address() || seen++ != occurrence) {
                continue;
            }
            return current.address() == origin.address() ? node : originNode(calls, origin, count, i, arena);
        }
        throw new IllegalArgumentException("the graph has " + seen + " node(s) launching kernel '" + kernelName
                + "'; there is no occurrence " + occurrence);
    }

    /**
     * The node of the origin graph paired with node {@code index} of the current one. Pairing by
     * position rests on the driver listing both graphs' nodes in creation order, which it does not
     * document; so the pair is checked as far as the update allows: the same node count, and a
     * kernel node at that position. Its function is not compared: an in-place update may have
     * changed it (a kernel of a replaced module), and the driver lets a node update change it too.
     */
    private static MemorySegment originNode(GraphCalls calls, MemorySegment origin, long currentCount, long index,
            Arena arena) {
        MemorySegment nodes = calls.nodes(origin, arena);
        if (nodes.byteSize() / ValueLayout.ADDRESS.byteSize() != currentCount
                || !calls.isKernelNode(nodes.getAtIndex(ValueLayout.ADDRESS, index))) {
            throw new IllegalStateException("node " + index + " of the graph this executable was updated to has no "
                    + "kernel node to pair with in the graph it was instantiated from, so no node was updated. "
                    + "Instantiate a fresh executable from the graph it runs now");
        }
        return nodes.getAtIndex(ValueLayout.ADDRESS, index);
    }
}
