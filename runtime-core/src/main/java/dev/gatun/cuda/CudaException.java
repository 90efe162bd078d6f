package dev.gatun.cuda;

import java.util.List;
import java.util.OptionalInt;

/**
 * A CUDA driver or NVRTC call returned an error. Carries the result's name and number, the
 * library's own description, the operation Gatun was performing, where known the device, and
 * the lines the driver logged about the failed call ({@link #driverLog()}, from drivers for
 * CUDA 12.9 on), which often name the argument it refused.
 * What to do depends on {@link #resultName()}: {@code CUDA_ERROR_OUT_OF_MEMORY} asks for less
 * memory (or closing owners first; an allocation that still ran out after the out-of-memory ladder
 * throws an {@link OutOfDeviceMemoryException}, which says where the memory is); a sticky error such as {@code CUDA_ERROR_ILLEGAL_ADDRESS}
 * is a kernel bug that has poisoned the context (later calls throw {@link ContextPoisonedException}).
 */
public class CudaException extends GatunException {
    private static final long serialVersionUID = 1L;

    /** The CUresult or nvrtcResult number. */
    private final int result;
    /** The result's symbolic name, e.g. {@code CUDA_ERROR_OUT_OF_MEMORY}. */
    private final String resultName;
    /** The library's own description of the result; may be empty. */
    private final String description;
    /** What Gatun was doing when the call failed. */
    private final String operation;
    /** The device ordinal, or -1 when the call was not tied to one device. */
    private final int device;
    /** What the driver logged about the failed call, oldest first; an immutable (serializable) list. */
    private final List<String> driverLog;

    /**
     * An exception for a failed call, without a cause.
     *
     * @param result the CUresult (or nvrtcResult) number
     * @param resultName its symbolic name, e.g. {@code CUDA_ERROR_OUT_OF_MEMORY}
     * @param description the library's description of the result ({@code cuGetErrorString})
     * @param operation what Gatun was doing, e.g. {@code cuMemAlloc(1048576 bytes)}
     * @param device the device ordinal, or -1 when the call is not tied to one device
     */
    public CudaException(int result, String resultName, String description, String operation, int device) {
        this(result, resultName, description, operation, device, List.of(), null);
    }

    /**
     * An exception for a failed driver call, with what the driver logged about it.
     *
     * @param result the CUresult number
     * @param resultName its symbolic name, e.g. {@code CUDA_ERROR_INVALID_VALUE}
     * @param description the driver's description of the result ({@code cuGetErrorString})
     * @param operation what Gatun was doing
     * @param device the device ordinal, or -1 when the call is not tied to one device
     * @param driverLog the driver's log lines for the call, oldest first; empty when it logged none
     */
    public CudaException(int result, String resultName, String description, String operation, int device,
            List<String> driverLog) {
        this(result, resultName, description, operation, device, driverLog, null);
    }

    /**
     * For subclasses that restate an earlier driver error (a poisoned context, an invalidated capture)
     * and keep it as their cause.
     *
     * @param result the CUresult (or nvrtcResult) number
     * @param resultName its symbolic name
     * @param description the library's description of the result
     * @param operation what Gatun was doing
     * @param device the device ordinal, or -1 when the call is not tied to one device
     * @param cause the error behind this one, or null
     */
    protected CudaException(int result, String resultName, String description, String operation, int device,
            Throwable cause) {
        this(result, resultName, description, operation, device, List.of(), cause);
    }

    /**
     * For subclasses that restate a failed driver call with more to say about it (a refused
     * launch, a rejected image) and keep it as their cause: they carry its driver log too.
     *
     * @param result the CUresult number
     * @param resultName its symbolic name
     * @param description the driver's description of the result
     * @param operation what Gatun was doing
     * @param device the device ordinal, or -1 when the call is not tied to one device
     * @param driverLog the driver's log lines for the call, oldest first; empty when it logged none
     * @param cause the error behind this one, or null
     */
    protected CudaException(int result, String resultName, String description, String operation, int device,
            List<String> driverLog, Throwable cause) {
        super(format(result, resultName, description, operation, device, driverLog), cause);
        this.result = result;
        this.resultName = resultName;
        this.description = description;
        this.operation = operation;
        this.device = device;
        this.driverLog = List.copyOf(driverLog);
    }

    private static String format(int result, String name, String description, String operation, int device,
            List<String> driverLog) {
        StringBuilder sb = new StringBuilder(operation).append(" failed: ").append(name).append(" (").append(result)
                .append(')');
        if (description != null && !description.isEmpty()) {
            sb.append(": ").append(description);
        }
        if (device >= 0) {
            sb.append(" [device ").append(device).append(']');
        }
        if (!driverLog.isEmpty()) {
            // Quoted, so that a subclass's own sentences after them stay apart from the driver's words.
            sb.append("; driver log: \"").append(String.join("\", \"", driverLog)).append('"');
        }
        return sb.toString();
    }

    /** {@return the CUresult or nvrtcResult number} */
    public int result() {
        return result;
    }

    /** {@return the result's symbolic name, e.g. {@code CUDA_ERROR_ILLEGAL_ADDRESS}} */
    public String resultName() {
        return resultName;
    }

    /** {@return the library's own description of the result; empty when it has none} */
    public String description() {
        return description == null ? "" : description;
    }

    /** {@return the operation that failed, as Gatun named it} */
    public String operation() {
        return operation;
    }

    /**
     * {@return the lines the driver logged about the failed call, oldest first} Empty when it
     * logged none: a driver older than CUDA 12.9 keeps no log, many results come without a line,
     * NVRTC logs nothing here (a {@code CompilationException} carries the compiler's log), and a
     * {@link ContextPoisonedException} made no driver call (its cause carries the first error's
     * lines). The lines are the ones the driver logged during the call that failed, never those of
     * another call (one that succeeded earlier, or one on another thread); each line is also
     * logged to SLF4J (logger {@code dev.gatun.cuda.driver}: a failed call's at WARN or INFO, a
     * call's that succeeded at DEBUG) and recorded as a {@code dev.gatun.DriverLog} JFR event.
     */
    public List<String> driverLog() {
        return driverLog;
    }

    /** {@return the device the operation ran on, if it ran on one} */
    public OptionalInt device() {
        return device < 0 ? OptionalInt.empty() : OptionalInt.of(device);
    }
}
