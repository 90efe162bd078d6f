package dev.gatun.cuda.graph;

import java.lang.foreign.MemorySegment;

/**
 * One installed capture: the graph last captured for it, the executable a replay launches, and
 * the graph that executable was instantiated from ({@code origin}).
 *
 * <p>An in-place update (cuGraphExecUpdate) makes the executable run a newer graph, but the
 * driver goes on naming the executable's nodes by the nodes of the graph it was instantiated
 * from: a node-level update (cuGraphExecKernelNodeSetParams) must pass one of those, and fails
 * once that graph is destroyed. So the origin lives exactly as long as the executable, however
 * many updates follow; only the graphs in between are dropped. Until the first update the two
 * graphs are the same.
 */
record Segment(MemorySegment graph, MemorySegment exec, MemorySegment origin) {

    /** A segment whose executable was just instantiated from {@code graph}. */
    static Segment instantiated(MemorySegment graph, MemorySegment exec) {
        return new Segment(graph, exec, graph);
    }

    /** This segment after its executable was updated in place to run {@code newer}. */
    Segment updatedTo(MemorySegment newer) {
        return new Segment(newer, exec, origin);
    }

    /** Whether the graph last captured is another than the origin (the executable was updated since). */
    boolean updated() {
        return graph.address() != origin.address();
    }
}
