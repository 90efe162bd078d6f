package dev.gatun.cuda.graph;

import dev.gatun.cuda.GatunException;

/**
 * The validation latch could not go on: it has opened its last generation (numbers never wrap,
 * so that a stale token can never read a later generation's result: create a new latch, that
 * is new {@link CudaGraphs}; results of generations already opened can still be consumed), or
 * its device word could not be cleared or read (the cause is the driver's error). The message
 * says which state the latch was left in: a failed begin opens nothing, a failed consume leaves
 * its generation pending, to be consumed again.
 */
public final class ValidationLatchException extends GatunException {
    private static final long serialVersionUID = 1L;

    /**
     * An exception without a driver error behind it (the latch has opened its last generation).
     *
     * @param message what failed, and what to do
     */
    public ValidationLatchException(String message) {
        super(message);
    }

    /**
     * An exception for a driver error that kept the latch from clearing or reading its word.
     *
     * @param message what failed, and what to do
     * @param cause the driver's error behind it
     */
    public ValidationLatchException(String message, Throwable cause) {
        super(message, cause);
    }
}
