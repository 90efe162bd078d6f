package dev.gatun.cuda;

/**
 * An owner of one context was used with an owner of another (a buffer of device 0 on a stream
 * of device 1, say). Rejected before any driver call; nothing was submitted.
 */
public final class ContextMismatchException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    public ContextMismatchException(String message) {
        super(message);
    }
}
