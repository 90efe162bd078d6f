package dev.gatun.cuda;

import java.util.List;

/**
 * A native library Gatun needs (the CUDA driver, or NVRTC) could not be loaded. The message
 * lists every place that was tried and why each failed, and says what to install or set.
 * Thrown by the first call that needs the library, and again by every later one.
 */
public final class CudaUnavailableException extends GatunException {
    private static final long serialVersionUID = 1L;

    /** Each place that was tried, with the reason it failed, in the order tried. */
    private final List<String> attempts;

    /**
     * An exception for a library that could not be found or initialized, without a cause.
     *
     * @param message what failed, and what to install or set
     * @param attempts each place tried, with the reason it failed
     */
    public CudaUnavailableException(String message, List<String> attempts) {
        super(message);
        this.attempts = List.copyOf(attempts);
    }

    /**
     * An exception for a library whose loading failed with an exception of its own.
     *
     * @param cause what went wrong, when loading failed with an exception of its own
     * @param message what failed, and what to install or set
     * @param attempts each place tried, with the reason it failed
     */
    public CudaUnavailableException(String message, List<String> attempts, Throwable cause) {
        super(message, cause);
        this.attempts = List.copyOf(attempts);
    }

    /**
     * {@return the same diagnosis as a new exception, so that every caller of a library that failed to
     * load gets a stack trace of its own call site} The cause, if any, is kept.
     */
    public CudaUnavailableException again() {
        return new CudaUnavailableException(getMessage(), attempts, getCause());
    }

    /** {@return each place tried, with the reason it failed, in the order tried} */
    public List<String> attempts() {
        return attempts;
    }
}
