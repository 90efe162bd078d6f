package dev.gatun.cuda;

/**
 * A pool's memory as the driver counts it ({@link MemoryPool#usage()}): reserved is what the
 * pool holds from the device, used is what its live allocations take (freed memory not yet
 * reused or released counts as reserved, not used). The high-water marks are the most since the
 * pool was made or since {@link MemoryPool#resetHighWater()}.
 *
 * @param reservedCurrent bytes the pool reserves now ({@code CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT})
 * @param reservedHigh the most it reserved ({@code CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH})
 * @param usedCurrent bytes its allocations use now ({@code CU_MEMPOOL_ATTR_USED_MEM_CURRENT})
 * @param usedHigh the most they used ({@code CU_MEMPOOL_ATTR_USED_MEM_HIGH})
 */
public record MemoryPoolUsage(long reservedCurrent, long reservedHigh, long usedCurrent, long usedHigh) {
}
