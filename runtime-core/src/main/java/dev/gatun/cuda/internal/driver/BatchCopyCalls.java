package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.bindings.driver.CUmemcpyAttributes;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Layer 2, batched copies: many pointer-to-pointer copies in one {@code cuMemcpyBatchAsync}, or,
 * where the driver lacks it, one {@code cuMemcpyAsync} each. Both name their stream ({@code live}
 * policy, see {@link DriverCalls}); both hand their raw result back, observed (a sticky result
 * still poisons), because the caller fences the pinned buffers of the batch whatever happened.
 *
 * <p>Which entry point: the generated bindings are CUDA 13.0's, whose {@code cuMemcpyBatchAsync}
 * is the symbol {@code cuMemcpyBatchAsync_v2} (no {@code failIdx}). Drivers for CUDA 12.8 and 12.9
 * export only the older {@code cuMemcpyBatchAsync}, with a {@code size_t *failIdx} before the
 * stream; the 13.0 headers declare no prototype for it, so Gatun has no checked binding of it, and
 * such a driver gets the one-at-a-time path ({@link DriverFeature#BATCHED_COPIES}). The driver is
 * asked once; later answers come from {@link Driver#supports}'s memory.
 */
public final class BatchCopyCalls {

    private static final String BATCH = "cuMemcpyBatchAsync";
    private static final String COPY = "cuMemcpyAsync";

    private final Checked c;

    BatchCopyCalls(Checked c) {
        this.c = c;
    }

    /** Whether the loaded driver has the batch entry point Gatun calls ({@code cuMemcpyBatchAsync_v2}). */
    public boolean batched() {
        return c.driver().supports(DriverFeature.BATCHED_COPIES);
    }

    /**
     * One {@code CUmemcpyAttributes} in {@code arena} for every copy of a batch: the source is read
     * in stream order ({@code CU_MEMCPY_SRC_ACCESS_ORDER_STREAM}: a device source may be written by
     * work queued before the batch, and a pinned source is Gatun's and fenced), no flags, and no
     * location hints (they matter only for managed memory, which Gatun does not hand out).
     */
    public static MemorySegment streamOrderedAttributes(Arena arena) {
        MemorySegment attributes = CUmemcpyAttributes.allocate(arena); // zeroed: no hints, no flags
        CUmemcpyAttributes.srcAccessOrder(attributes, CudaDriver.CU_MEMCPY_SRC_ACCESS_ORDER_STREAM());
        return attributes;
    }

    /** Fails fast when the context is poisoned (before a batch changes any state). */
    public void live() {
        c.live(BATCH);
    }

    /**
     * Queues {@code count} copies on {@code stream} in one call; the raw result. Call only when
     * {@link #batched()}.
     *
     * @param dsts {@code count} destination addresses ({@code CUdeviceptr}, 8 bytes each)
     * @param srcs {@code count} source addresses
     * @param sizes {@code count} byte counts ({@code size_t})
     * @param attributes {@code numAttributes} {@code CUmemcpyAttributes}
     * @param attributeStarts {@code numAttributes} indices ({@code size_t}) of the first copy each applies to
     */
    public int tryBatch(MemorySegment dsts, MemorySegment srcs, MemorySegment sizes, long count,
            MemorySegment attributes, MemorySegment attributeStarts, long numAttributes, MemorySegment stream) {
        // Safety: the caller's contract: each array holds at least count (or numAttributes)
        // entries and stays alive for the call (the driver reads them during it); every range
        // lies inside pinned host memory fenced after this call or an open device allocation of
        // this context that lists this stream; the stream is open, of this context, not capturing.
        return c.observe(c.api.cuMemcpyBatchAsync_v2(dsts, srcs, sizes, count, attributes, attributeStarts,
                numAttributes, stream), BATCH);
    }

    /** Queues one copy of {@code bytes} on {@code stream} (unified addressing: any direction); the raw result. */
    public int tryCopy(long destination, long source, long bytes, MemorySegment stream) {
        // Safety: as in tryBatch, for one range pair.
        return c.observe(c.api.cuMemcpyAsync(destination, source, bytes, stream), COPY);
    }
}
