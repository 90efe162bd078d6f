package dev.gatun.cuda.graph;

/**
 * The 4-byte device word behind a {@link ValidationLatch}: kernels OR error bits into it (see
 * {@link LatchHeader}), the latch clears it when a generation opens and reads it when the
 * generation is consumed. On a GPU this is a device allocation and the context's stream; CPU
 * tests use a fake. The latch calls these methods from one thread at a time.
 */
public interface LatchDeviceWord {

    /**
     * Enqueues a clear of the word on the stream the validated work runs on, so that it takes
     * effect before any kernel submitted afterwards. Does not wait.
     */
    void clearAsync();

    /**
     * Waits for the work submitted so far, then returns the word's bits and clears it. If this
     * throws, the latch publishes nothing and may call it again, so a retry must be harmless (a
     * read that succeeded before the clear failed simply reads the same bits again).
     *
     * @return the bits raised since the last clear
     */
    int readAndClear();
}
