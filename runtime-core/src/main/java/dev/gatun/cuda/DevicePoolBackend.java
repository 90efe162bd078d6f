package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.ContextCore;
import dev.gatun.cuda.internal.pool.PoolBackend;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The device pool's driver side for one context: cuMemAlloc and cuMemFree, each inside a
 * synchronizing section of the capture gate (a pool hit makes no driver call, so it needs no
 * section). Counts the context's synchronous allocations, frees and live bytes.
 */
final class DevicePoolBackend implements PoolBackend {

    private final ContextCore core;

    DevicePoolBackend(ContextCore core) {
        this.core = core;
    }

    @Override
    public long allocate(long bytes) {
        core.enter("cuMemAlloc");
        MemorySegment out = core.scratch();
        // Safety: scratch holds the CUdeviceptr the driver writes; cuMemAlloc may synchronize,
        // so it runs in a synchronizing section.
        core.synchronizing("cuMemAlloc", () -> core.api().cuMemAlloc_v2(out, bytes));
        core.stats().syncAllocations.increment();
        core.stats().bytesLive.add(bytes);
        return out.get(ValueLayout.JAVA_LONG, 0);
    }

    @Override
    public int free(long address, long bytes) {
        if (!core.gate().tryEnterSynchronizing()) {
            return dev.gatun.cuda.bindings.driver.CudaDriver.CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED();
        }
        try {
            // Safety: the pool frees a block only after the retirement queue saw every fence of
            // its last use complete (or at trim, when it holds no block anyone uses).
            int r = core.api().cuMemFree_v2(address);
            if (r == 0) {
                core.stats().syncFrees.increment();
                core.stats().bytesLive.add(-bytes);
            }
            return r;
        } finally {
            core.gate().exitSynchronizing();
        }
    }
}
