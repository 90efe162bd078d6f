package dev.gatun.cuda.internal.memory;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.context.Retirement;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The Java view of a pinned host allocation ({@code cuMemHostAlloc}), which must be closed before
 * the memory is freed: a segment still open over freed memory would read or write whatever the
 * allocator put there next. Shared by pinned buffers and mapped words.
 */
final class HostView {

    private final Arena arena = Arena.ofShared();
    private final MemorySegment segment;
    /** False until {@link #close} succeeded; it fails while another thread is inside a call using the view. */
    private boolean closed;

    /**
     * A view of the {@code bytes} at {@code address}; the caller has just allocated them there.
     * Safety: the view's arena is closed ({@link #close}) before the memory is freed
     * ({@link #release}), so the view never reaches freed memory.
     */
    HostView(long address, long bytes) {
        this.segment = MemorySegment.ofAddress(address).reinterpret(bytes, arena, null);
    }

    MemorySegment segment() {
        return segment;
    }

    /**
     * Closes the view, just before its owner is retired. If another thread is inside a call using
     * it, the view stays open and {@link #release} leaks the memory instead of freeing it.
     */
    void close() {
        try {
            arena.close();
            closed = true;
        } catch (IllegalStateException inUse) {
            closed = false;
        }
    }

    /** How retirement frees the memory: {@code free}, or an abandonment (with retirement's log line) if the view stayed open. */
    Retirement.Release release(Retirement.Release free) {
        return closed ? free : () -> CudaDriver.CUDA_ERROR_INVALID_VALUE();
    }
}
