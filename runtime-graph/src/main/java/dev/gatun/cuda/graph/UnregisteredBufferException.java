package dev.gatun.cuda.graph;

/**
 * During a capture that registered its buffers, work used a device buffer that was not
 * registered: its address would be baked into the graph without the graph keeping the buffer
 * alive. Thrown before the work is queued; the capture continues.
 */
public final class UnregisteredBufferException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    public UnregisteredBufferException(String message) {
        super(message);
    }
}
