package dev.gatun.cuda;

import dev.gatun.cuda.internal.graph.ExecUpdates;

/**
 * Why an executable was, or was not, updated in place from another graph
 * ({@link GraphExec#tryUpdate(Graph)}): the driver's {@code CUgraphExecUpdateResult}, plus the
 * one refusal Gatun makes before the driver. Every result but {@link #APPLIED} leaves the
 * executable unchanged; instantiating the new graph ({@link Graph#instantiate()}) always works
 * where the graph is valid, at the cost of an instantiation (milliseconds, where an update takes
 * about a tenth of one).
 */
public enum GraphUpdateResult {

    /** Updated: launches from now on run the new graph. */
    APPLIED(ExecUpdates.UPDATE_SUCCESS),
    /** The driver refused for a reason it did not classify. */
    REFUSED(ExecUpdates.UPDATE_ERROR),
    /** Nodes or edges were added or removed: the shape of the work changed (a new batch size, another branch). */
    TOPOLOGY_CHANGED(ExecUpdates.TOPOLOGY_CHANGED),
    /** A node at the same place is of another type (a copy where a kernel was). */
    NODE_TYPE_CHANGED(ExecUpdates.NODE_TYPE_CHANGED),
    /** A kernel node runs another function in a way an update cannot change (another context, or a cooperative switch). */
    FUNCTION_CHANGED(ExecUpdates.FUNCTION_CHANGED),
    /** A node's parameters changed in a way an update cannot apply (for example a copy's memory type). */
    PARAMETERS_CHANGED(ExecUpdates.PARAMETERS_CHANGED),
    /** Something about the graph cannot be updated at all (some node kinds and settings). */
    NOT_SUPPORTED(ExecUpdates.NOT_SUPPORTED),
    /** A kernel node's function changed to one the driver cannot swap in (for example with other launch properties). */
    UNSUPPORTED_FUNCTION_CHANGE(ExecUpdates.UNSUPPORTED_FUNCTION_CHANGE),
    /** A node's attributes (for example a kernel's cluster or priority) changed in a way an update cannot apply. */
    ATTRIBUTES_CHANGED(ExecUpdates.ATTRIBUTES_CHANGED),
    /**
     * Refused by Gatun before the driver: one of the graphs has memory nodes, whose allocations
     * have addresses of their own that an update would hand to this executable.
     */
    MEMORY_NODES(-1),
    /**
     * Refused by Gatun before the driver: the graphs were captured into different
     * {@linkplain CaptureArena capture arenas} (or one into an arena and the other not), and an
     * executable's replays are ordered by the arena of the graph it was made from.
     */
    ARENA_CHANGED(-2);

    private final int code;

    GraphUpdateResult(int code) {
        this.code = code;
    }

    /** {@return whether the executable now runs the new graph} */
    public boolean isApplied() {
        return this == APPLIED;
    }

    /** The result for the driver's {@code CUgraphExecUpdateResult} {@code code}; {@link #REFUSED} for one this release does not know. */
    static GraphUpdateResult ofDriver(int code) {
        for (GraphUpdateResult r : values()) {
            if (r.code == code && r.code >= 0) {
                return r;
            }
        }
        return REFUSED;
    }
}
