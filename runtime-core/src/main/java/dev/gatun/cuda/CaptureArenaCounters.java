package dev.gatun.cuda;

/**
 * A snapshot of a {@link CaptureArena}'s memory and use.
 *
 * @param reservedBytes the address range reserved: the most the arena can map
 * @param mappedBytes the device memory mapped now, in whole chunks: all the memory the arena's
 *     graphs use, at least what captures may take ({@link CaptureArena#byteSize()})
 * @param chunkBytes the size of each mapped chunk
 * @param peakCaptureBytes the most bytes one capture (or probe) into the arena took
 * @param captures captures into the arena that are over (ended, aborted or invalidated)
 * @param probes measuring captures ({@link CaptureArena#probe}) that are over
 * @param overflows allocations refused because they did not fit
 * @param orderedReplays replays that had to wait for a replay of a graph of the arena on another stream
 */
public record CaptureArenaCounters(long reservedBytes, long mappedBytes, long chunkBytes, long peakCaptureBytes,
        long captures, long probes, long overflows, long orderedReplays) {
}
