package dev.gatun.cuda.internal.pool;

import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.driver.CuResults;
import dev.gatun.cuda.internal.events.MemoryCapEvent;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * A pool's hard cap and soft limit, with the counts of their events: Gatun's device pool and
 * the CUDA memory pools each have one.
 *
 * <p><b>Hard cap.</b> Where Gatun enforces it, the bytes counted against it ({@link #footprint})
 * are claimed before the driver is asked ({@link #tryClaim}), so two threads cannot both take the
 * last of it; a request that would pass the cap is refused with {@code CUDA_ERROR_OUT_OF_MEMORY}
 * ({@link #refusal}), which the out-of-memory ladder climbs like any other.
 *
 * <p><b>Soft limit and idleness.</b> Above its soft limit a pool gives memory back when it is
 * idle: when no allocation was made from it between two consecutive checks at safe points
 * ({@link #idle}). Checking reads the pool's own allocation count, which its allocations already
 * keep; nothing is added to an allocation, and no thread runs in the background. Idleness is
 * noticed at the next safe point, not at a moment of its own.
 */
public final class PoolCaps {

    /** No cap, or no soft limit. */
    public static final long NONE = Long.MAX_VALUE;
    private static final int OUT_OF_MEMORY = CudaDriver.CUDA_ERROR_OUT_OF_MEMORY();

    private final long hardCap;
    private final long softLimit;
    private final AtomicLong footprint = new AtomicLong();
    private final LongAdder refusals = new LongAdder();
    private final LongAdder softTrims = new LongAdder();
    /** The allocation count seen by the last idleness check; -1 before the first. Guarded by this. */
    private long allocationsSeen = -1;

    /**
     * @param hardCap the most bytes, or {@link #NONE}
     * @param softLimit bytes above which an idle pool gives memory back, or {@link #NONE}; when
     *     set, at most {@code hardCap}
     */
    public PoolCaps(long hardCap, long softLimit) {
        if (hardCap <= 0 || softLimit <= 0 || softLimit != NONE && softLimit > hardCap) {
            throw new IllegalArgumentException("a hard cap of " + hardCap + " bytes and a soft limit of " + softLimit
                    + " bytes: both must be positive, and the soft limit at most the cap");
        }
        this.hardCap = hardCap;
        this.softLimit = softLimit;
    }

    public long hardCap() {
        return hardCap;
    }

    public long softLimit() {
        return softLimit;
    }

    public boolean capped() {
        return hardCap != NONE;
    }

    public boolean softLimited() {
        return softLimit != NONE;
    }

    /** Counts {@code bytes} against the hard cap, unless they would pass it: then counts a refusal and says false. */
    public boolean tryClaim(long bytes) {
        if (hardCap == NONE) {
            // Nothing to pass: one add, no compare-and-set loop. The soft limit and the trims read
            // this same count.
            footprint.getAndAdd(bytes);
            return true;
        }
        long now;
        do {
            now = footprint.get();
            if (now > hardCap - bytes) {
                refusals.increment();
                return false;
            }
        } while (!footprint.compareAndSet(now, now + bytes));
        return true;
    }

    /** Stops counting {@code bytes} (freed, or never allocated after a claim). */
    public void unclaim(long bytes) {
        footprint.addAndGet(-bytes);
    }

    /** The bytes counted now. */
    public long footprint() {
        return footprint.get();
    }

    /** Whether the counted bytes are above the soft limit. */
    public boolean overSoftLimit() {
        return footprint.get() > softLimit;
    }

    /**
     * Whether the pool has been idle since the previous check: its count of allocations so far,
     * {@code allocations}, has not changed. The first check is never idle.
     */
    public synchronized boolean idle(long allocations) {
        boolean idle = allocations == allocationsSeen;
        allocationsSeen = allocations;
        return idle;
    }

    /** Counts a refusal of {@code bytes} the driver made for this cap of {@code pool}, where it enforces the cap. */
    public void countRefusal(String pool, long bytes) {
        refusals.increment();
        MemoryCapEvent.record(pool, "hard cap refusal", bytes);
    }

    /** Counts a trim of {@code pool} that gave {@code bytes} back because it was idle above its soft limit. */
    public void countSoftTrim(String pool, long bytes) {
        softTrims.increment();
        MemoryCapEvent.record(pool, "soft limit trim", bytes);
    }

    public long refusals() {
        return refusals.sum();
    }

    public long softTrims() {
        return softTrims.sum();
    }

    /**
     * The out-of-memory error for a request of {@code bytes} that {@link #tryClaim} refused, naming
     * {@code pool}; records the refusal for Flight Recorder.
     */
    public CudaException refusal(String pool, long bytes, int device) {
        MemoryCapEvent.record(pool, "hard cap refusal", bytes);
        return new CudaException(OUT_OF_MEMORY, CuResults.name(OUT_OF_MEMORY), "over the hard cap of " + pool + ": "
                + footprint.get() + " bytes counted + " + bytes + " requested > " + hardCap + " bytes",
                pool + " hard cap", device);
    }
}
