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

    /**
     * Checks the components.
     *
     * @throws IllegalArgumentException when a size is negative, or {@code minimumReservedBytes} exceeds a nonzero
     *     {@code maxBytes}
     */
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
     * {@return options that reserve the device's total memory, falling back to halves down to one chunk
     * when the address space is short; chunks of the recommended granularity}
     */
    public static GrowableBufferOptions defaults() {
        return new GrowableBufferOptions(0, 0, 0);
    }

    /**
     * Reserve exactly {@code bytes} (rounded up to a chunk), with no fallback to less.
     *
     * @param bytes the reservation, at least 1 byte
     * @return the options
     */
    public static GrowableBufferOptions exactly(long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("reserve at least one byte, not " + bytes);
        }
        return new GrowableBufferOptions(bytes, bytes, 0);
    }

    /**
     * {@return these options with another reservation; the minimum is lowered to it if it was above}
     *
     * @param bytes the new {@link #maxBytes()}; 0 for the device's total memory
     */
    public GrowableBufferOptions withMaxBytes(long bytes) {
        return new GrowableBufferOptions(bytes, Math.min(minimumReservedBytes, bytes == 0 ? Long.MAX_VALUE : bytes),
                chunkBytes);
    }

    /**
     * {@return these options with another least reservation}
     *
     * @param bytes the new {@link #minimumReservedBytes()}; 0 for one chunk
     */
    public GrowableBufferOptions withMinimumReservedBytes(long bytes) {
        return new GrowableBufferOptions(maxBytes, bytes, chunkBytes);
    }

    /**
     * {@return these options with another chunk size}
     *
     * @param bytes the new {@link #chunkBytes()}; 0 for the recommended granularity
     */
    public GrowableBufferOptions withChunkBytes(long bytes) {
        return new GrowableBufferOptions(maxBytes, minimumReservedBytes, bytes);
    }
}
