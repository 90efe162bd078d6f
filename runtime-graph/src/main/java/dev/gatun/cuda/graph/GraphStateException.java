package dev.gatun.cuda.graph;

/**
 * A graph slot or owner was asked for something its phase does not allow: resetting or retiring
 * while a capture is open, ending a capture that was never begun, replaying a slot that holds
 * nothing, using a retired owner. Nothing was changed and no driver call was made.
 */
public final class GraphStateException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    private final SlotPhase phase;

    public GraphStateException(String message, SlotPhase phase) {
        super(message);
        this.phase = phase;
    }

    /** The phase that refused the operation. */
    public SlotPhase phase() {
        return phase;
    }
}
