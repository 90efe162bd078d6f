package dev.gatun.cuda;

/**
 * How a stream capture interacts with other threads, as CUDA's {@code CUstreamCaptureMode}.
 */
public enum CaptureMode {
    /**
     * Any thread's potentially unsafe call (a synchronizing allocation, free, module load...)
     * invalidates the capture. Gatun's capture gate holds such calls back while it lasts.
     */
    GLOBAL,
    /** Only unsafe calls made by the capturing thread itself invalidate the capture. */
    THREAD_LOCAL,
    /** No call is checked; the caller guarantees nothing unsafe runs during the capture. */
    RELAXED
}
