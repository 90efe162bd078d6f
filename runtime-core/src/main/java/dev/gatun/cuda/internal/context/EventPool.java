package dev.gatun.cuda.internal.context;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;

/**
 * Fence events (timing disabled, the cheapest kind) for completion evidence and cross-stream
 * fences, reused instead of created and destroyed per use: destroying an event is one of the
 * calls that may synchronize. Re-recording a pooled event is safe: a wait or query issued
 * earlier refers to the record that preceded it.
 */
public final class EventPool {

    static final int MAX_POOLED = 256;
    private static final int FENCE_FLAGS = CudaDriver.CU_EVENT_DISABLE_TIMING();

    private final ContextCore context;
    private final ArrayDeque<MemorySegment> free = new ArrayDeque<>();

    EventPool(ContextCore context) {
        this.context = context;
    }

    /**
     * A fence event: pooled, or created now.
     *
     * @throws dev.gatun.cuda.CudaException when the driver cannot create one
     */
    public MemorySegment acquire() {
        synchronized (free) {
            MemorySegment e = free.pollFirst();
            if (e != null) {
                return e;
            }
        }
        MemorySegment event;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            // Safety: out holds one CUevent and lives across the call.
            context.check(context.api().cuEventCreate(out, FENCE_FLAGS), "cuEventCreate");
            event = MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
        }
        return event;
    }

    /** Returns an event whose last record nobody will wait on or query any more. */
    public void release(MemorySegment event) {
        synchronized (free) {
            if (free.size() < MAX_POOLED) {
                free.addFirst(event);
                return;
            }
        }
        context.retirement().submit(new Retirement("pooled fence event", dev.gatun.cuda.OwnerKind.EVENT,
                java.util.List.of(), () -> context.api().cuEventDestroy_v2(event), true));
    }

    /** Destroys the pooled events; at context shutdown, inside a synchronizing section. */
    void destroyPooled() {
        synchronized (free) {
            for (MemorySegment e; (e = free.pollFirst()) != null;) {
                // Safety: pooled events have no pending record anyone relies on.
                context.api().cuEventDestroy_v2(e);
            }
        }
    }
}
