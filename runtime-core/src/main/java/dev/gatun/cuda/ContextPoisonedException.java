package dev.gatun.cuda;

/**
 * A sticky error (illegal address, launch failure, uncorrectable ECC error, ...) has left the
 * context unusable: the driver answers every later call on it with the same error. Gatun fails
 * such calls fast with this exception; {@link #getCause()} is the first error. Only a new
 * process recovers the device.
 */
public final class ContextPoisonedException extends CudaException {
    private static final long serialVersionUID = 1L;

    /**
     * Reports that {@code operation} was refused because the context is poisoned.
     *
     * @param operation the call that was refused
     * @param first the sticky error that poisoned the context, kept as the cause
     */
    public ContextPoisonedException(String operation, CudaException first) {
        super(first.result(), first.resultName(),
                "the context was poisoned earlier by a sticky error in " + first.operation()
                        + "; CUDA work on this device needs a new process",
                operation, first.device().orElse(-1), first);
    }

    /** {@return the sticky error that poisoned the context} */
    public CudaException firstError() {
        return (CudaException) getCause();
    }
}
