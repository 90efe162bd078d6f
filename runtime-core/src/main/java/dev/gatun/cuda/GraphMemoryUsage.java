package dev.gatun.cuda;

/**
 * The device's graph memory as the driver counts it ({@link CudaContext#graphMemoryUsage()}): the
 * memory it keeps for the allocation nodes of graphs (what {@link Stream#allocate} inside a
 * capture becomes). Used is what allocations of launched graphs take now; reserved is what the
 * driver holds for them, used or not, until {@link CudaContext#trimGraphMemory()} returns the
 * unused part. The high-water marks are the most since the process began or since
 * {@link CudaContext#resetGraphMemoryHighWater()}. The figures are the device's, for every
 * context and library of this process on it.
 *
 * @param usedCurrent bytes in use now ({@code CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT})
 * @param usedHigh the most in use ({@code CU_GRAPH_MEM_ATTR_USED_MEM_HIGH})
 * @param reservedCurrent bytes reserved now ({@code CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT})
 * @param reservedHigh the most reserved ({@code CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH})
 */
public record GraphMemoryUsage(long usedCurrent, long usedHigh, long reservedCurrent, long reservedHigh) {
}
