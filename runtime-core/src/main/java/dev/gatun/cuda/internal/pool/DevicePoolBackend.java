package dev.gatun.cuda.internal.pool;

import dev.gatun.cuda.internal.context.ContextState;

/**
 * The device pool's driver side for one context: cuMemAlloc inside a synchronizing section of the
 * capture gate of its own, cuMemFree inside its caller's (a pool hit makes no driver call, so it
 * needs no section). Counts the context's synchronous allocations, frees and live bytes.
 */
public final class DevicePoolBackend implements PoolBackend {

    private static final String ALLOC = "cuMemAlloc";

    private final ContextState contextState;

    public DevicePoolBackend(ContextState contextState) {
        this.contextState = contextState;
    }

    @Override
    public long allocate(long bytes) {
        long address;
        // cuMemAlloc may synchronize, so it runs in a synchronizing section.
        try (var _ = contextState.enterSection(ALLOC)) {
            address = contextState.calls().memory().allocate(bytes);
        }
        return address;
    }

    @Override
    public int free(long address, long bytes) {
        // Inside the caller's section (PoolBackend.free). The pool frees a block only after the
        // retirement queue saw every fence of its last use complete (or at trim, when it holds no
        // block anyone uses). The free makes the context current itself: the caller's gate may
        // have parked this thread and moved it to another carrier. The pool counts the free and
        // its bytes (DevicePoolTally).
        return contextState.calls().memory().free(address);
    }
}
