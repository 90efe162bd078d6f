package dev.gatun.cuda;

/**
 * How much device address space a {@link GrowableBuffer} reserves, and the chunks it maps
 * ({@link CudaContext#reserveGrowable(GrowableBufferOptions)}). Sizes are rounded up to whole
 * chunks.
 *
 * @param maxBytes the reservation asked for, the most the buffer can grow to; 0 for the device's
 *     total memory
 * @param minimumReservedBytes the least reservation accepted: when the address space is short
 *     (the driver refuses {@code maxBytes}), the request halves down to this; 0 for one chunk;
 *     at most {@code maxBytes} (when that is not 0)
 * @param chunkBytes the size of each physical chunk mapped; a multiple of the device's minimum
 *     allocation granularity ({@code CU_MEM_ALLOC_GRANULARITY_MINIMUM}, 2 MiB on current GPUs);
 *     0 for its recommended granularity ({@code CU_MEM_ALLOC_GRANULARITY_RECOMMENDED})
 */
public record GrowableBufferOptions(long maxBytes, long minimumReservedBytes, long chunkBytes) {

    public GrowableBufferOptions {
        if (maxBytes < 0 || minimumReservedBytes < 0 || chunkBytes < 0) {
            throw new IllegalArgumentException("sizes must be >= 0 (0 picks the default): maxBytes " + maxBytes
                    + ", minimumReservedBytes " + minimumReservedBytes + ", chunkBytes " + chunkBytes);
        }
        if (maxBytes != 0 && minimumReservedBytes > maxBytes) {
            throw new IllegalArgumentException("minimumReservedBytes " + minimumReservedBytes + " exceeds maxBytes "
                    + maxBytes + "; the reservation falls back from maxBytes down to the minimum, not above it");
        }
    }

    /**
     * Reserve the device's total memory, falling back to halves down to one chunk when the address
     * space is short; chunks of the recommended granularity.
     */
    public static GrowableBufferOptions defaults() {
        return new GrowableBufferOptions(0, 0, 0);
    }

    /** Reserve exactly {@code bytes} (rounded up to a chunk), with no fallback to less. */
    public static GrowableBufferOptions exactly(long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("reserve at least one byte, not " + bytes);
        }
        return new GrowableBufferOptions(bytes, bytes, 0);
    }

    public GrowableBufferOptions withMaxBytes(long bytes) {
        return new GrowableBufferOptions(bytes, Math.min(minimumReservedBytes, bytes == 0 ? Long.MAX_VALUE : bytes),
                chunkBytes);
    }

    public GrowableBufferOptions withMinimumReservedBytes(long bytes) {
        return new GrowableBufferOptions(maxBytes, bytes, chunkBytes);
    }

    public GrowableBufferOptions withChunkBytes(long bytes) {
        return new GrowableBufferOptions(maxBytes, minimumReservedBytes, bytes);
    }
}
