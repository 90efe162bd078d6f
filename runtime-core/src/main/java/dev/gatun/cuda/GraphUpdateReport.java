package dev.gatun.cuda;

/**
 * Why an in-place update ({@link GraphExec#tryUpdateExplained}) was, or was not, applied: the
 * result, and the driver's {@code CUgraphExecUpdateResultInfo} nodes at fault, each described by
 * its type and position in its graph's node list (for example "kernel node 3 of Graph#12"), or
 * null where the driver named none (it names none for a changed topology, nor on success).
 *
 * @param result {@link GraphUpdateResult#APPLIED}, or why not
 * @param errorNode the node of the new graph the driver blamed ({@code errorNode}), or null
 * @param errorFromNode the node of the executable's graph it was compared with ({@code errorFromNode}), or null
 */
public record GraphUpdateReport(GraphUpdateResult result, String errorNode, String errorFromNode) {

    /** The report of an applied update, or of a refusal without nodes at fault. */
    static GraphUpdateReport of(GraphUpdateResult result) {
        return new GraphUpdateReport(result, null, null);
    }

    /** {@return whether the executable now runs the new graph} */
    public boolean isApplied() {
        return result.isApplied();
    }

    @Override
    public String toString() {
        return result + (errorNode == null ? "" : " at " + errorNode) + (errorFromNode == null ? "" : " (was " + errorFromNode + ")");
    }
}
