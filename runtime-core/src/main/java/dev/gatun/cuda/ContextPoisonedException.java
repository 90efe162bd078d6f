package dev.gatun.cuda;

import java.nio.file.Path;
import java.util.Objects;
import java.util.Optional;

/**
 * A sticky error (illegal address, launch failure, uncorrectable ECC error, ...) has left the
 * context unusable: the driver answers every later call on it with the same error. Gatun fails
 * such calls fast with this exception; {@link #getCause()} is the first error. Only a new
 * process recovers the device.
 *
 * <p>When the context was opened with {@link GpuCoredumps} on, the driver wrote a GPU coredump
 * as the fault was reported: {@link #coredumpFile()} names it, and the message says how to open
 * it with {@code cuda-gdb}.
 */
public final class ContextPoisonedException extends CudaException {
    private static final long serialVersionUID = 1L;

    /** The dump's path as text (a Path is not serializable), or null. */
    private final String coredumpFile;

    /**
     * Reports that {@code operation} was refused because the context is poisoned.
     *
     * @param operation the call that was refused
     * @param first the sticky error that poisoned the context, kept as the cause
     */
    public ContextPoisonedException(String operation, CudaException first) {
        this(operation, first, Optional.empty(), "");
    }

    /**
     * Reports that {@code operation} was refused because the context is poisoned, naming the GPU
     * coredump the driver wrote when the sticky error happened.
     *
     * @param operation the call that was refused
     * @param first the sticky error that poisoned the context, kept as the cause
     * @param coredumpFile the dump file, when it is known
     * @param coredumpNote what the message says about the dump (where it is, how to open it, or
     *     why it was not found); empty when dumps were off
     */
    public ContextPoisonedException(String operation, CudaException first, Optional<Path> coredumpFile,
            String coredumpNote) {
        super(first.result(), first.resultName(),
                "the context was poisoned earlier by a sticky error in " + first.operation()
                        + "; CUDA work on this device needs a new process"
                        + (Objects.requireNonNull(coredumpNote, "coredumpNote").isEmpty() ? "" : "; " + coredumpNote),
                operation, first.device().orElse(-1), first);
        this.coredumpFile = coredumpFile.map(Path::toString).orElse(null);
    }

    /** {@return the sticky error that poisoned the context} */
    public CudaException firstError() {
        return (CudaException) getCause();
    }

    /**
     * {@return the GPU coredump the driver wrote when the context was poisoned, or empty when
     * {@link GpuCoredumps} were off or no file matching their pattern was found} Open it with
     * {@code cuda-gdb -ex "target cudacore FILE"}.
     */
    public Optional<Path> coredumpFile() {
        return Optional.ofNullable(coredumpFile).map(Path::of);
    }
}
