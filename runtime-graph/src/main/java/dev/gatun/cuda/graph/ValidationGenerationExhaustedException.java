package dev.gatun.cuda.graph;

import dev.gatun.cuda.GatunException;

/**
 * A latch has opened its last generation: numbers never wrap, since a reused number could let a
 * stale token read a later generation's result. Create a new latch (a new context). Results of
 * generations already opened can still be consumed.
 */
public final class ValidationGenerationExhaustedException extends GatunException {
    private static final long serialVersionUID = 1L;

    public ValidationGenerationExhaustedException(String message) {
        super(message);
    }
}
