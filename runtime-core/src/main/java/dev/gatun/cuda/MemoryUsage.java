package dev.gatun.cuda;

/**
 * Memory as the driver counts it, for a CUDA memory pool ({@link MemoryPool#usage()}) or for the
 * device's graph memory ({@link ContextDiagnostics#graphMemoryUsage()}): <em>used</em> is what live
 * allocations take; <em>reserved</em> is what the driver holds for them from the device, used or
 * not (freed memory not yet reused or released counts as reserved, not used). The peaks are the
 * most since the pool or process began, or since the last reset ({@link MemoryPool#resetPeaks()},
 * {@link ContextDiagnostics#resetGraphMemoryPeaks()}).
 *
 * @param usedBytes bytes in use now ({@code CU_MEMPOOL_ATTR_USED_MEM_CURRENT},
 *     {@code CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT})
 * @param peakUsedBytes the most in use ({@code *_USED_MEM_HIGH})
 * @param reservedBytes bytes reserved now ({@code *_RESERVED_MEM_CURRENT})
 * @param peakReservedBytes the most reserved ({@code *_RESERVED_MEM_HIGH})
 */
public record MemoryUsage(long usedBytes, long peakUsedBytes, long reservedBytes, long peakReservedBytes) {
}
