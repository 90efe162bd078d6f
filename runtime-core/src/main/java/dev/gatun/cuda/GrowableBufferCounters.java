package dev.gatun.cuda;

/**
 * What one {@link GrowableBuffer} holds and did ({@link GrowableBuffer#counters()}).
 *
 * @param reservedBytes device address space reserved ({@code cuMemAddressReserve}); the most the buffer can grow to
 * @param chunkBytes the size of each physical chunk
 * @param mappedChunks physical chunks mapped now (each a {@code cuMemCreate} handle), including any whose
 *     unmap failed and waits for retirement
 * @param mappedBytes {@code mappedChunks * chunkBytes}: device memory the buffer holds now
 * @param peakMappedBytes the most it held at once
 * @param grows calls of {@code grow} that mapped at least one chunk
 * @param shrinks calls of {@code shrink} that unmapped at least one chunk
 */
public record GrowableBufferCounters(long reservedBytes, long chunkBytes, long mappedChunks, long mappedBytes,
        long peakMappedBytes, long grows, long shrinks) {
}
