package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.pool.DevicePool;
import java.util.List;

/**
 * A context's device pool, as its user sees it ({@link ContextDiagnostics#devicePool()}): counters,
 * call-site profiling, and trimming. It owns nothing; the pool lives and dies with its context.
 */
public final class DevicePoolView {

    private static final String TRIM = "cuMemFree (device pool trim)";

    private final CudaContext context;
    private final ContextState state;
    private final DevicePool pool;

    DevicePoolView(CudaContext context, ContextState state, DevicePool pool) {
        this.context = context;
        this.state = state;
        this.pool = pool;
    }

    /** {@return the pool's counters (hits, misses, retained bytes, driver allocations and frees)} */
    public DevicePoolCounters counters() {
        return pool.counters();
    }

    /** {@return the per-call-site profile, most bytes first (empty unless profiling is on)} */
    public List<DevicePoolSite> sites() {
        return pool.sites();
    }

    /**
     * Switches call-site profiling (costs nothing while off).
     *
     * @param on true to attribute allocations to their call sites from now on, false to stop
     */
    public void setProfiling(boolean on) {
        pool.setProfiling(on);
    }

    /**
     * Returns every block the pool retains to the driver. The frees may synchronize the device,
     * so this waits, as a synchronous allocation does, while another thread captures in global mode.
     *
     * @throws CudaException with the first result a free failed with (the block is dropped, not reused)
     * @throws CaptureActiveException when a global-mode capture stays active past the context's gate timeout
     */
    public void trim() {
        context.checkOpen();
        trimNow();
    }

    /**
     * Trims on behalf of the context, also while it shuts down: inside one synchronizing section
     * for all its frees (the pool's frees take none of their own).
     */
    void trimNow() {
        state.calls().checked().live(TRIM);
        int r;
        try (var _ = state.enterSection(TRIM)) {
            r = pool.trim(); // each free makes the context current on the carrier it runs on
        }
        if (r != 0) {
            throw state.calls().checked().fail(r, TRIM);
        }
    }

    @Override
    public String toString() {
        return "DevicePool[" + context + ", " + counters() + "]";
    }
}
