package dev.gatun.cuda.internal.memory;

import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.pool.DevicePool;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The soft limits' work at a context's safe points ({@code CudaContext.reap()} and
 * {@code synchronize()}): each pool above its soft limit that was idle since the previous safe
 * point gives memory back down to the limit. No thread watches the pools; idleness is what two
 * consecutive safe points see. Costs nothing while no pool has a soft limit.
 */
public final class SoftLimits {

    private static final Logger LOG = LoggerFactory.getLogger(SoftLimits.class);
    private static final String TRIM = "cuMemFree (device pool soft limit)";

    private final ContextState context;
    private final DevicePool devicePool;
    private final PoolRegistry pools;

    public SoftLimits(ContextState context, DevicePool devicePool, PoolRegistry pools) {
        this.context = context;
        this.devicePool = devicePool;
        this.pools = pools;
    }

    /** Checks every pool with a soft limit; call at a safe point, with no stream's lock held. */
    public void atSafePoint() {
        boolean device = devicePool.caps().softLimited() && devicePool.caps().overSoftLimit();
        if (!device && !pools.anySoftLimited() || context.poisoned() || capturingHere()) {
            return; // nothing to check; or the driver can free nothing more; or a capture here forbids it
        }
        if (device) {
            trimDevicePool();
        }
        for (PoolMemory pool : pools.pools()) {
            if (pool.softLimited()) {
                try {
                    pool.trimIfIdle();
                } catch (RuntimeException e) {
                    LOG.warn("Trimming {} down to its soft limit failed; the next safe point tries again: {}", pool,
                            e.getMessage());
                }
            }
        }
    }

    /** The device pool's part: its frees may synchronize, so never during a global capture. */
    private void trimDevicePool() {
        if (!context.gate().tryEnterSynchronizing()) {
            return;
        }
        try {
            context.calls().checked().live(TRIM);
            devicePool.trimIfIdle(); // each free makes the context current on the carrier it runs on
        } catch (RuntimeException e) {
            LOG.warn("Trimming the device pool down to its soft limit failed; the next safe point tries again: {}",
                    e.getMessage());
        } finally {
            context.gate().exitSynchronizing();
        }
    }

    /** Whether the calling thread has a capture open, where trims must not run (they may synchronize). */
    private boolean capturingHere() {
        return context.gate().capturingOnCurrentThread() || context.ordering().captureBegunOnCurrentThread();
    }
}
