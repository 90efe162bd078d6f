package dev.gatun.cuda.graph;

/**
 * The latch's phase does not allow the call: beginning while an earlier generation is still
 * open, attaching to or activating a generation already active, using an unregistered owner.
 * Nothing was changed.
 */
public final class ValidationStateException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    public ValidationStateException(String message) {
        super(message);
    }
}
