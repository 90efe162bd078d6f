package dev.gatun.cuda.blas;

import dev.gatun.cuda.GatunException;

/**
 * A cuBLAS, cuBLASLt or cuDNN call returned a failure status. Carries the library, the operation
 * and the library's own status name and number ({@code CUBLAS_STATUS_NOT_SUPPORTED},
 * {@code CUDNN_STATUS_BAD_PARAM}). Gatun checks shapes, sizes and types before a call, so a
 * status here is what the library alone knows: no algorithm for this shape on this GPU, an
 * execution failure (then a sticky CUDA error usually poisons the context at Gatun's next driver
 * call), a library that could not initialize.
 */
public final class BlasException extends GatunException {

    private static final long serialVersionUID = 1L;

    /** "cuBLAS", "cuBLASLt" or "cuDNN". */
    private final String library;
    /** The function that failed. */
    private final String operation;
    /** The library's status number. */
    private final int status;
    /** The library's name for it. */
    private final String statusName;

    /**
     * A failed library call.
     *
     * @param library "cuBLAS", "cuBLASLt" or "cuDNN"
     * @param operation the function (and what it served)
     * @param status the status the library returned
     * @param statusName the library's name for it
     */
    public BlasException(String library, String operation, int status, String statusName) {
        this(library, operation, status, statusName, null);
    }

    /**
     * A failed library call, with what the caller can change.
     *
     * @param library "cuBLAS", "cuBLASLt" or "cuDNN"
     * @param operation the function (and what it served)
     * @param status the status the library returned
     * @param statusName the library's name for it
     * @param advice what the library said beyond the status and what to change, or null
     */
    public BlasException(String library, String operation, int status, String statusName, String advice) {
        super(operation + " failed: " + statusName + " (" + status + ") [" + library + "]"
                + (advice == null ? "" : ": " + advice));
        this.library = library;
        this.operation = operation;
        this.status = status;
        this.statusName = statusName;
    }

    /** {@return the library that failed: "cuBLAS", "cuBLASLt" or "cuDNN"} */
    public String library() {
        return library;
    }

    /** {@return the operation that failed} */
    public String operation() {
        return operation;
    }

    /** {@return the library's status number} */
    public int status() {
        return status;
    }

    /** {@return the library's name for the status, e.g. {@code CUBLAS_STATUS_NOT_SUPPORTED}} */
    public String statusName() {
        return statusName;
    }
}
