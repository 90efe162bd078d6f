package dev.gatun.cuda;

/**
 * A stream capture was invalidated before it ended, so no graph came of it: the driver's
 * {@code CUDA_ERROR_STREAM_CAPTURE_INVALIDATED} (its exception is the cause), with what usually
 * does it. A device-synchronizing call ran during a global-mode capture (from a thread Gatun's
 * capture gate does not see, or through a raw handle), or work was joined into the capture from
 * a stream that was not capturing. The capture is over and holds nothing: capture again, in
 * thread-local mode or with that call moved out of the capture.
 */
public final class CaptureInvalidatedException extends CudaException {
    private static final long serialVersionUID = 1L;

    /**
     * Restates the driver's error with what probably caused it.
     *
     * @param explanation what probably invalidated the capture and what to do, in place of the
     *     driver's description (which the cause keeps)
     * @param cause the driver's {@code CUDA_ERROR_STREAM_CAPTURE_INVALIDATED}
     */
    public CaptureInvalidatedException(String explanation, CudaException cause) {
        super(cause.result(), cause.resultName(), explanation, cause.operation(), cause.device().orElse(-1),
                cause.driverLog(), cause);
    }
}
