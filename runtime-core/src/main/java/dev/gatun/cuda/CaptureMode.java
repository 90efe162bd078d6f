package dev.gatun.cuda;

/**
 * How a stream capture interacts with other threads, as CUDA's {@code CUstreamCaptureMode}.
 *
 * <p>The driver ties a {@link #GLOBAL} or {@link #THREAD_LOCAL} capture to the OS thread that
 * began it: only that thread may end it, and a thread-local one forbids unsafe calls to that OS
 * thread. A virtual thread moves to another OS thread (its carrier) whenever it parks, and shares
 * its carrier with other virtual threads, so on a virtual thread only {@link #RELAXED} captures
 * can begin; the others are refused with an {@link IllegalStateException} before any driver call.
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
