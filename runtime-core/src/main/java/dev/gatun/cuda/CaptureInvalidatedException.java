package dev.gatun.cuda;

/**
 * A stream capture was invalidated before it ended, so no graph came of it
 * ({@code CUDA_ERROR_STREAM_CAPTURE_INVALIDATED}, the cause). Usually a device-synchronizing call
 * ran during a global-mode capture (from a thread Gatun's capture gate does not see, or through
 * a raw handle), or work was joined into the capture from a stream that was not capturing. The
 * capture is over and holds nothing: capture again, in thread-local mode or with that call moved
 * out of the capture.
 */
public final class CaptureInvalidatedException extends GatunException {
    private static final long serialVersionUID = 1L;

    public CaptureInvalidatedException(String message, CudaException cause) {
        super(message, cause);
    }
}
