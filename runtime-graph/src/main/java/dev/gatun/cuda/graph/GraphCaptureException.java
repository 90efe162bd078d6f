package dev.gatun.cuda.graph;

import dev.gatun.cuda.GatunException;

/**
 * The driver failed while a slot began, ended or installed a capture (invalidated capture,
 * instantiate, in-place update or upload failure). The slot is exactly as it was before the
 * capture began, and whatever the failed attempt created has been destroyed or handed to
 * retirement. The cause is the driver's error.
 */
public final class GraphCaptureException extends GatunException {
    private static final long serialVersionUID = 1L;

    public GraphCaptureException(String message, Throwable cause) {
        super(message, cause);
    }
}
