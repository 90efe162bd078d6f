package dev.gatun.cuda.graph;

/**
 * A validation token, or an owner passed with it, does not fit the latch's current generation.
 * Rejected before anything changed: the latch, its word and every owner are as they were.
 */
public final class ValidationTokenException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    /** Why the token was rejected. */
    public enum Reason {
        /** The token's generation is over or was superseded; its result is no longer kept. */
        STALE,
        /** The token or the owner belongs to another latch, or was never issued. */
        FOREIGN,
        /** The owner is not a recipient of the token's generation, or not its submitter. */
        WRONG_OWNER
    }

    private final Reason reason;

    public ValidationTokenException(Reason reason, String message) {
        super(message);
        this.reason = reason;
    }

    public Reason reason() {
        return reason;
    }
}
