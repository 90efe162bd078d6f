package dev.gatun.cuda;

import dev.gatun.cuda.internal.graph.Conditionals;

/**
 * The value a conditional node reads ({@link Graph#createConditionalHandle}): a
 * {@code CUgraphConditionalHandle} that kernels of the graph set with
 * {@code gatun_conditional_set(handle, value)} (the runtime-graph module's
 * {@code gatun_conditional.cuh}, around CUDA's {@code cudaGraphSetConditional}); pass it to them
 * with {@link #asKernelArg()}.
 *
 * <p>A value without a lifecycle of its own: the driver keeps it as long as the graph it was
 * created in, and it has no destroy. It is used by the conditional nodes of that graph and of
 * the bodies inside it; every handle must be used by at least one node before the graph is
 * instantiated.
 */
public final class ConditionalHandle {

    private final Graph graph;
    private final long value;
    private final int defaultValue;
    private final boolean assignedEachLaunch;

    ConditionalHandle(Graph graph, long value, int defaultValue, boolean assignedEachLaunch) {
        this.graph = graph;
        this.value = value;
        this.defaultValue = defaultValue;
        this.assignedEachLaunch = assignedEachLaunch;
    }

    /** {@return the graph it was created in: its nodes, and the nodes of bodies inside it, may use it} */
    public Graph graph() {
        return graph;
    }

    /** {@return the handle as the driver gave it: what a kernel receives as {@code cudaGraphConditionalHandle}} */
    public long value() {
        return value;
    }

    /** {@return the value every launch starts with, when {@link #isAssignedEachLaunch()}} */
    public int defaultValue() {
        return defaultValue;
    }

    /**
     * {@return whether every launch of an executable starts with {@link #defaultValue()} (else a kernel
     * sets it first)}
     */
    public boolean isAssignedEachLaunch() {
        return assignedEachLaunch;
    }

    /**
     * {@return the kernel argument a {@code cudaGraphConditionalHandle} parameter (an {@code unsigned long
     * long}) takes}
     */
    public KernelArg asKernelArg() {
        return KernelArg.i64(value);
    }

    /** Checks that a node of {@code user} may use this handle: one of that graph or of a graph it is a body of. */
    void checkUsableIn(Graph user) {
        for (Graph g = user; g != null; g = g.parent()) {
            if (g == graph) {
                return;
            }
        }
        throw new IllegalArgumentException(this + " is not of " + user + " nor of a graph it is a body of; create "
                + "the handle with createConditionalHandle on this graph");
    }

    @Override
    public String toString() {
        return Conditionals.describeHandle(value, graph.toString(), defaultValue, assignedEachLaunch);
    }
}
