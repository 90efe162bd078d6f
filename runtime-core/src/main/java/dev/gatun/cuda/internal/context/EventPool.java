package dev.gatun.cuda.internal.context;

import dev.gatun.cuda.OwnerKind;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.List;

/**
 * Fence events (timing disabled, the cheapest kind) for completion evidence and cross-stream
 * fences, reused instead of created and destroyed per use: destroying an event is one of the
 * calls that may synchronize. Re-recording a pooled event is safe: a wait or query issued
 * earlier refers to the record that preceded it.
 */
public final class EventPool {

    static final int MAX_POOLED = 256;

    private final ContextState context;
    private final ArrayDeque<MemorySegment> free = new ArrayDeque<>();

    EventPool(ContextState context) {
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
        return context.calls().events().create(false);
    }

    /** Returns an event whose last record nobody will wait on or query any more. */
    public void release(MemorySegment event) {
        synchronized (free) {
            if (free.size() < MAX_POOLED) {
                free.addFirst(event);
                return;
            }
        }
        context.retirement().submit(new Retirement("pooled fence event", OwnerKind.EVENT, List.of(),
                () -> context.calls().events().destroy(event), true));
    }

    /** Destroys the pooled events; at context shutdown, inside a synchronizing section. */
    void destroyPooled() {
        synchronized (free) {
            for (MemorySegment e; (e = free.pollFirst()) != null;) {
                // Pooled events have no pending record anyone relies on.
                context.calls().events().destroy(e);
            }
        }
    }
}
