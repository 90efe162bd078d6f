package dev.gatun.cuda.graph;

import dev.gatun.cuda.GatunException;

/**
 * The latch's device word could not be cleared or read. The message says which state the latch
 * was left in (a failed begin opens nothing; a failed consume leaves its generation pending, to
 * be consumed again). The cause is the driver's error.
 */
public final class ValidationLatchException extends GatunException {
    private static final long serialVersionUID = 1L;

    public ValidationLatchException(String message, Throwable cause) {
        super(message, cause);
    }
}
