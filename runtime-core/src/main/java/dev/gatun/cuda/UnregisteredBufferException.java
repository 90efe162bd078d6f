package dev.gatun.cuda;

/**
 * During a capture begun with the list of device buffers it may use
 * ({@link Stream#beginCapture(CaptureMode, java.util.Collection)}), work used a buffer not on the
 * list: its address would be baked into the graph although the caller did not plan for it.
 * Thrown before the work is queued; the capture continues.
 */
public final class UnregisteredBufferException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    public UnregisteredBufferException(String message) {
        super(message);
    }
}
