package dev.gatun.cuda.graph;

import dev.gatun.cuda.GatunException;

/**
 * Launching one segment of a replay failed. The segments before it were launched and their work
 * is on the stream; the failed one and those after it were not. The cause is the driver's error.
 */
public final class GraphReplayException extends GatunException {
    private static final long serialVersionUID = 1L;

    private final int segment;

    public GraphReplayException(String message, int segment, Throwable cause) {
        super(message, cause);
        this.segment = segment;
    }

    /** The capture-order index of the segment whose launch failed. */
    public int segment() {
        return segment;
    }
}
