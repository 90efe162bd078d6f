package dev.gatun.cuda;

import java.util.OptionalInt;

/**
 * A CUDA driver or NVRTC call returned an error. Carries the result's name and number, the
 * library's own description, the operation Gatun was performing and, where known, the device.
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
        this(result, resultName, description, operation, device, null);
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
        super(format(result, resultName, description, operation, device), cause);
        this.result = result;
        this.resultName = resultName;
        this.description = description;
        this.operation = operation;
        this.device = device;
    }

    private static String format(int result, String name, String description, String operation, int device) {
        StringBuilder sb = new StringBuilder(operation).append(" failed: ").append(name).append(" (").append(result)
                .append(')');
        if (description != null && !description.isEmpty()) {
            sb.append(": ").append(description);
        }
        if (device >= 0) {
            sb.append(" [device ").append(device).append(']');
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

    /** {@return the device the operation ran on, if it ran on one} */
    public OptionalInt device() {
        return device < 0 ? OptionalInt.empty() : OptionalInt.of(device);
    }
}
