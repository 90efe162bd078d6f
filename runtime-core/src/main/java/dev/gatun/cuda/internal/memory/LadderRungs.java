package dev.gatun.cuda.internal.memory;

import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.Retirement;
import dev.gatun.cuda.internal.driver.GraphMemoryCalls;
import dev.gatun.cuda.internal.pool.DevicePool;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The work of each rung of the out-of-memory ladder, for one context. Every rung runs with no
 * stream's lock held, and each driver call that may synchronize the device runs inside a
 * synchronizing section of the capture gate, entered without waiting: while another thread
 * captures in global mode, such a call is skipped rather than made to wait or to invalidate it.
 */
final class LadderRungs {

    private static final Logger LOG = LoggerFactory.getLogger(LadderRungs.class);
    private static final String TRIM = "cuMemFree (device pool trim, out of memory)";
    private static final String SYNCHRONIZE = "cuCtxSynchronize (out of memory)";

    private final ContextState context;
    private final DevicePool devicePool;
    private final PoolRegistry pools;

    LadderRungs(ContextState context, DevicePool devicePool, PoolRegistry pools) {
        this.context = context;
        this.devicePool = devicePool;
        this.pools = pools;
    }

    /**
     * Rung 1: frees what retirement can now, after waiting (host-blocking, outside global
     * captures) for the fences of the closed owners that hold memory.
     *
     * @return the handles freed
     */
    int retire() {
        return context.retirement().awaitAndReap(LadderRungs::holdsMemory);
    }

    /** Whether a retirement gives memory back once freed (an executable frees its graph's allocations). */
    private static boolean holdsMemory(Retirement r) {
        return switch (r.kind()) {
            case DEVICE_BUFFER, PINNED_BUFFER, MEMORY_POOL, GROWABLE_BUFFER, GRAPH, GRAPH_EXEC -> true;
            default -> false;
        };
    }

    /**
     * Rung 2: trims Gatun's device pool (every retained block), each CUDA memory pool down to its
     * release threshold, and the device's graph memory. A pool that cannot be trimmed is logged
     * and skipped.
     *
     * @return the bytes given back to the device
     */
    long trim() {
        long bytes = trimDevicePool();
        for (PoolMemory pool : pools.pools()) {
            try {
                bytes += pool.trimToReleaseThreshold();
            } catch (RuntimeException e) {
                LOG.warn("Out of memory: trimming {} failed; the ladder goes on without it: {}", pool, e.getMessage());
            }
        }
        return bytes + trimGraphMemory();
    }

    /** Frees every block Gatun's device pool retains; the bytes freed (0 while a global capture holds the gate). */
    long trimDevicePool() {
        if (!context.gate().tryEnterSynchronizing()) {
            return 0;
        }
        try {
            context.calls().checked().live(TRIM); // each free then makes the context current itself
            long before = devicePool.footprint();
            int r = devicePool.trim();
            if (r != 0) {
                LOG.warn("Out of memory: the device pool could not free every retained block ({})",
                        context.resultName(r));
            }
            return before - devicePool.footprint();
        } finally {
            context.gate().exitSynchronizing();
        }
    }

    /** Returns the graph memory no graph uses to the device; the reserved bytes given back. */
    private long trimGraphMemory() {
        if (!context.gate().tryEnterSynchronizing()) {
            return 0;
        }
        try {
            GraphMemoryCalls graphs = context.calls().graphMemory();
            long before = graphs.attribute(GraphMemoryCalls.RESERVED_CURRENT);
            graphs.trim();
            return Math.max(0, before - graphs.attribute(GraphMemoryCalls.RESERVED_CURRENT));
        } catch (RuntimeException e) {
            LOG.warn("Out of memory: trimming graph memory failed; the ladder goes on without it: {}", e.getMessage());
            return 0;
        } finally {
            context.gate().exitSynchronizing();
        }
    }

    /**
     * Rung 3: waits for the context's work, then frees what that completed. With no capture
     * possible anywhere in the context, a context-wide {@code cuCtxSynchronize} inside the gate
     * (which also waits for work other code queued, and lets the driver's pools release memory
     * above their thresholds). Otherwise, since that call would invalidate any capture of the
     * context, the context's synchronous stream waits for the work queued on each of Gatun's
     * streams (the frees queued on them included) and is synchronized; a capturing stream is
     * waited for up to where its capture began.
     */
    void synchronize() {
        if (!synchronizeWholeContext()) {
            context.ordering().orderAfterAllWork(context.syncStream());
            context.stats().forcedSynchronizations.increment();
            // The context's synchronous stream: open while the context is, and never captured.
            context.calls().streams().synchronize(context.syncStream().handle());
        }
        context.reap();
    }

    /** {@code cuCtxSynchronize}, when no capture can be in progress in the context; whether it ran. */
    private boolean synchronizeWholeContext() {
        if (context.captures().anyPossible() || !context.gate().tryEnterSynchronizing()) {
            return false;
        }
        try {
            if (context.captures().anyPossible()) {
                return false; // a capture began meanwhile (the gate only keeps global ones out)
            }
            context.stats().forcedSynchronizations.increment();
            context.calls().live(SYNCHRONIZE);
            context.calls().context().synchronize();
            return true;
        } finally {
            context.gate().exitSynchronizing();
        }
    }
}
