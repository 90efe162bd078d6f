package dev.gatun.cuda;

/**
 * Root of Gatun's typed, unchecked exceptions: catch this to handle every failure Gatun
 * reports itself. Misuse that is the caller's bug (bad arguments, use after close) is reported
 * with the JDK's {@link IllegalArgumentException} and {@link IllegalStateException} instead.
 */
public class GatunException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public GatunException(String message) {
        super(message);
    }

    public GatunException(String message, Throwable cause) {
        super(message, cause);
    }
}
