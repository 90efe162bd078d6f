package dev.gatun.cuda;

import dev.gatun.cuda.bindings.driver.CudaDriver;

/**
 * When a {@link MemoryPool} may hand memory freed in one stream's order to an allocation in
 * another's. All three are on by default; each trades reuse (less reserved memory) against
 * ordering the pool adds between streams. Read and set them with {@link MemoryPool#isReuseEnabled} and
 * {@link MemoryPool#setReuseEnabled}, or at creation through {@link MemoryPoolOptions}.
 */
public enum PoolReuse {
    /**
     * Reuse memory whose free is known complete from the events the allocating stream already
     * waits on ({@code CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES}).
     */
    FOLLOW_EVENT_DEPENDENCIES(CudaDriver.CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES()),
    /**
     * Reuse memory whose free the driver sees has already completed on the GPU, with no ordering
     * between the streams ({@code CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC}); which allocations
     * reuse what then depends on timing.
     */
    ALLOW_OPPORTUNISTIC(CudaDriver.CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC()),
    /**
     * Let the driver make the allocating stream wait for the freeing stream's work so that it can
     * reuse the memory ({@code CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES}): less memory,
     * but a dependency between streams the program did not ask for.
     */
    ALLOW_INTERNAL_DEPENDENCIES(CudaDriver.CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES());

    final int attribute;

    PoolReuse(int attribute) {
        this.attribute = attribute;
    }
}
