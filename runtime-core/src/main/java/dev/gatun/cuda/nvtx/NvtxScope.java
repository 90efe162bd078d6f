package dev.gatun.cuda.nvtx;

/**
 * An open push/pop range, for try-with-resources: {@link #close()} pops the innermost range of
 * its domain on the calling thread. One object per domain, returned by every push, so a range
 * allocates nothing; close it once per push, on the thread that pushed.
 */
public final class NvtxScope implements AutoCloseable {

    private final NvtxDomain domain;

    NvtxScope(NvtxDomain domain) {
        this.domain = domain;
    }

    /** Pops this thread's innermost range of the domain ({@link NvtxDomain#pop()}). */
    @Override
    public void close() {
        domain.pop();
    }
}
