package dev.gatun.cuda.graph;

/**
 * Where dropped segments go. A segment's executable may have launches still running on the GPU
 * when its slot is reset, re-instantiated or retired, so the lifecycle never destroys a submitted
 * executable itself: it hands the segment here, and the implementation (the context's retirement
 * queue) calls {@link RetiredSegment#destroy()} once the executable's last launch has completed.
 */
@FunctionalInterface
public interface GraphRetirement {

    /**
     * Takes ownership of {@code segment}. Should not throw; if it does, the lifecycle has already
     * dropped the segment and reports the failure to its caller.
     */
    void retire(RetiredSegment segment);
}
