package dev.gatun.cuda.internal.context;

/**
 * What a Gatun-managed stream capture keeps of the owners its captured work uses. A captured
 * graph bakes in module handles and buffer addresses, so those owners must outlive every
 * launch of the graph, even if the user closes them meanwhile: the scope {@linkplain
 * NativeResource#hold() holds} each one it admits, and its graph releases the holds once its
 * last launch has completed.
 */
public interface CaptureScope {

    /**
     * Where work recorded into a capture that Gatun did not begin went (one begun through an
     * exported raw handle, or by another library): it holds nothing and nothing joins it.
     */
    CaptureScope FOREIGN = new CaptureScope() {
        @Override
        public void admit(NativeResource resource) {
            throw new UnsupportedOperationException("a capture Gatun did not begin admits nothing");
        }

        @Override
        public GraphAllocations allocations() {
            throw new UnsupportedOperationException("a capture Gatun did not begin has no allocations Gatun knows");
        }

        @Override
        public boolean isOpen() {
            return false;
        }
    };

    /**
     * Called when work using {@code resource} is queued on the capturing stream. Holds it, or
     * refuses it (a buffer not registered with the capture) by throwing before anything is
     * queued.
     */
    void admit(NativeResource resource);

    /** The allocations made on the capturing stream during this capture (graph allocations). */
    GraphAllocations allocations();

    /**
     * Whether the capture is still open: false from right after the driver ended it (set under
     * the capturing stream's lock), so that streams which joined it leave it too.
     */
    boolean isOpen();

    /**
     * The conditional node's body the capture records into, named for refusals (the driver allows
     * no memory, host or memory-operation node in one), or null for a capture into a new graph.
     */
    default String conditionalBody() {
        return null;
    }

    /** Whether the capture was begun on {@code thread} (a capture Gatun did not begin names none). */
    default boolean begunOn(Thread thread) {
        return false;
    }
}
