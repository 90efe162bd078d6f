package dev.gatun.cuda;

/**
 * A call that synchronizes the device (allocation, free, module load, context synchronize, ...)
 * could not run because a global-mode stream capture was active on its context: running it
 * would have invalidated the capture. Either the configured wait passed, or the calling thread
 * holds the capture itself. Do such work before capturing, or capture in thread-local or
 * relaxed mode.
 */
public final class CaptureActiveException extends GatunException {
    private static final long serialVersionUID = 1L;

    /**
     * An exception with the message the refused call gives.
     *
     * @param message what was refused, and what to do instead
     */
    public CaptureActiveException(String message) {
        super(message);
    }
}
