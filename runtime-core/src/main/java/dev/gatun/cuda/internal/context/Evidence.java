package dev.gatun.cuda.internal.context;

import dev.gatun.cuda.internal.driver.CuResults;

/**
 * Completion evidence for the last use of a resource on one stream: something that can say,
 * without blocking, whether GPU work submitted before a point in that stream has finished.
 */
public interface Evidence {

    /** Result of {@link #poll()} while the work may still run: the driver's CUDA_ERROR_NOT_READY. */
    int PENDING = CuResults.NOT_READY;

    /**
     * Polls without blocking. May make progress itself, e.g. record a fence that could not be
     * recorded earlier because the stream was capturing.
     *
     * @return 0 when complete, {@link #PENDING}, or a driver error (the poll is retried later)
     */
    int poll();

    /**
     * Blocks until the evidence is complete, where it can (a recorded fence: the host waits for
     * its event); otherwise polls. Only the retirement queue's reaper calls it, so what it waits
     * on cannot be released meanwhile.
     *
     * @return as {@link #poll()}
     */
    default int await() {
        return poll();
    }

    /** Gives back what the evidence holds (a pooled event). Called once, after it is no longer needed. */
    void release();

    /** Evidence of nothing: the resource was never used on a stream. */
    Evidence NONE = new Evidence() {
        @Override
        public int poll() {
            return 0;
        }

        @Override
        public void release() {
        }

        @Override
        public String toString() {
            return "no stream use";
        }
    };
}
