package dev.gatun.cuda;

/**
 * Root of every runtime failure Gatun reports, all unchecked: catch this to handle them all.
 * Thrown as such only where no subtype fits (a resource missing from a broken jar, say); the
 * subtypes are {@link CudaException} (a driver or NVRTC call failed; {@link ContextPoisonedException},
 * {@link CaptureInvalidatedException}, {@link OutOfDeviceMemoryException} and
 * {@code nvrtc.CompilationException} refine it),
 * {@link CudaUnavailableException}, {@link DriverTooOldException}, {@link CaptureActiveException}
 * and, in runtime-graph, {@code ValidationLatchException}.
 *
 * <p>Misuse, the caller's bug (bad arguments, a configuration beyond the device's limits, a
 * malformed module image, owners of two contexts used together, use after close, a call in the
 * wrong phase), is not a runtime failure: it is a plain {@link IllegalArgumentException} or
 * {@link IllegalStateException} whose message says what to change, as in {@code java.lang.foreign},
 * thrown before any driver call.
 */
public class GatunException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * An exception without a cause.
     *
     * @param message what failed, and what to do
     */
    public GatunException(String message) {
        super(message);
    }

    /**
     * An exception caused by another.
     *
     * @param message what failed, and what to do
     * @param cause the failure behind it
     */
    public GatunException(String message, Throwable cause) {
        super(message, cause);
    }
}
