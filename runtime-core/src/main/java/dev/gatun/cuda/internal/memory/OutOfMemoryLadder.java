package dev.gatun.cuda.internal.memory;

import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.MemoryReport;
import dev.gatun.cuda.OutOfDeviceMemoryException;
import dev.gatun.cuda.OutOfMemoryCounters;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.StreamState;
import dev.gatun.cuda.internal.events.OutOfMemoryEvent;
import dev.gatun.cuda.internal.events.OutOfMemoryRungEvent;
import dev.gatun.cuda.internal.nvtx.AutomaticRanges;
import dev.gatun.cuda.internal.pool.DevicePool;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One context's out-of-memory ladder: what every allocation does when the driver answers
 * {@code CUDA_ERROR_OUT_OF_MEMORY} (or a pool's hard cap refuses it), through the one method
 * {@link #retry}, before it fails. The rungs ({@link Rung}, {@link LadderRungs}) are tried in
 * order, each costlier than the one before; after a rung that gave memory back, and always after
 * the last, the allocation is tried again, and the first success ends the climb. An allocation
 * that still fails throws one {@link OutOfDeviceMemoryException}, with a {@link MemoryReport}.
 *
 * <p><b>Where it runs.</b> Under no lock of Gatun's: it retires (whose frees may take a growable
 * buffer's lock) and synchronizes (which takes stream locks), and rung 1 waits for the retirement
 * queue's reaping lock. An allocation made under its stream's (or buffer's, or graph's) lock fails
 * out of the locked section, the ladder climbs, and the whole locked allocation runs again; entered
 * under a stream's lock, it refuses, as a Gatun bug. Never on a thread that has a capture open (in global mode, anything
 * that synchronizes would invalidate it; in the others, the driver forbids the same calls on that
 * thread): the allocation then fails at once, with a report that asks the driver nothing.
 *
 * <p><b>Cost.</b> Nothing until an allocation fails: the allocation paths only catch the failure.
 *
 * <p><b>Off</b> ({@code ContextOptions.outOfMemoryLadder}), the driver's error is thrown as it was
 * before the ladder, except that Gatun's device pool still trims itself and tries once more.
 */
public final class OutOfMemoryLadder {

    private static final Logger LOG = LoggerFactory.getLogger(OutOfMemoryLadder.class);
    private static final int OUT_OF_MEMORY = CudaDriver.CUDA_ERROR_OUT_OF_MEMORY();

    private final ContextState context;
    private final boolean enabled;
    private final LadderRungs rungs;
    private final MemoryReports reports;
    private final LadderStats stats = new LadderStats();

    public OutOfMemoryLadder(ContextState context, DevicePool devicePool, PoolRegistry pools, boolean enabled) {
        this.context = context;
        this.enabled = enabled;
        this.rungs = new LadderRungs(context, devicePool, pools);
        this.reports = new MemoryReports(context, devicePool, pools);
    }

    /** Whether allocations climb it (the context's setting). */
    public boolean enabled() {
        return enabled;
    }

    public OutOfMemoryCounters counters() {
        return stats.snapshot();
    }

    /** A memory report now (the driver is not asked on a thread with a capture open). */
    public MemoryReport report() {
        return reports.take(!captureOnThisThread());
    }

    /**
     * The one way an allocation recovers from {@code failure}: climbs the ladder and runs
     * {@code attempt} (the whole allocation, locks included) again as it says. Call from the
     * allocation's catch block, with no stream's lock held; {@code failure} is thrown unchanged
     * when it is not an out-of-memory error.
     *
     * @param bytes what the allocation asked for (0 where the driver decides)
     * @return what {@code attempt} returned, once it succeeded
     * @throws OutOfDeviceMemoryException when every retry ran out of memory too
     */
    public <T> T retry(CudaException failure, AllocationKind kind, long bytes, Supplier<T> attempt) {
        if (failure.result() != OUT_OF_MEMORY || failure instanceof OutOfDeviceMemoryException) {
            throw failure;
        }
        StreamState locked = context.ordering().streamLockedByCurrentThread();
        if (locked != null) {
            throw new IllegalStateException("a Gatun bug: the out-of-memory ladder was entered under the lock of "
                    + locked + "; it retires and synchronizes, which the stream protocol forbids there", failure);
        }
        if (!enabled) {
            return withoutLadder(failure, kind, attempt);
        }
        return climb(failure, kind, bytes, attempt);
    }

    /**
     * The ladder switched off: the driver's error as before, except that the device pool trims
     * itself once and retries, as it always did.
     */
    private <T> T withoutLadder(CudaException failure, AllocationKind kind, Supplier<T> attempt) {
        if (kind != AllocationKind.DEVICE_POOL) {
            throw failure;
        }
        rungs.trimDevicePool();
        return attempt.get();
    }

    private <T> T climb(CudaException failure, AllocationKind kind, long bytes, Supplier<T> attempt) {
        stats.climbs.increment();
        OutOfMemoryEvent event = OutOfMemoryEvent.start();
        if (captureOnThisThread()) {
            stats.skippedInCapture.increment();
            throw fail(event, kind, bytes, failure, failure, "not climbed: a capture is open on this thread", false);
        }
        LOG.debug("Out of memory: {} on {}; climbing the ladder", kind.describe(bytes), context);
        CudaException last = failure;
        for (Rung rung : Rung.values()) {
            OutOfMemoryRungEvent step = OutOfMemoryRungEvent.start();
            long range = AutomaticRanges.ON ? AutomaticRanges.start(AutomaticRanges.named("out of memory: " + rung), bytes)
                    : 0;
            try {
                boolean retry = run(rung, step) || rung == Rung.SYNCHRONIZE;
                if (retry) {
                    try {
                        T result = attempt.get();
                        stats.rescued[rung.ordinal()].increment();
                        done(step, rung, true, true);
                        done(event, kind, bytes, "rescued after " + rung);
                        return result;
                    } catch (CudaException e) {
                        if (e.result() != OUT_OF_MEMORY) {
                            throw e; // another failure: the allocation's own, reported as it is
                        }
                        last = e;
                    }
                }
                done(step, rung, retry, false);
            } finally {
                if (AutomaticRanges.ON) {
                    AutomaticRanges.end(range);
                }
            }
        }
        stats.failures.increment();
        throw fail(event, kind, bytes, failure, last, "failed", true);
    }

    /** Runs one rung; whether it gave memory back. A rung that fails is logged and gave nothing. */
    private boolean run(Rung rung, OutOfMemoryRungEvent step) {
        try {
            switch (rung) {
                case RETIREMENT -> {
                    stats.retirementRuns.increment();
                    int freed = rungs.retire();
                    stats.retirementsFreed.add(freed);
                    if (step != null) {
                        step.retirementsFreed = freed;
                    }
                    return freed > 0;
                }
                case TRIM -> {
                    stats.trimRuns.increment();
                    long bytes = rungs.trim();
                    stats.bytesTrimmed.add(bytes);
                    if (step != null) {
                        step.bytesReleased = bytes;
                    }
                    return bytes > 0;
                }
                case SYNCHRONIZE -> {
                    stats.synchronizeRuns.increment();
                    rungs.synchronize();
                    return true;
                }
                default -> throw new AssertionError(rung);
            }
        } catch (RuntimeException e) {
            LOG.warn("Out of memory on {}: the ladder's {} rung failed; climbing on: {}", context, rung,
                    e.getMessage());
            return false;
        }
    }

    /** Whether the calling thread has a capture of this context open: global mode, or one it began in another mode. */
    private boolean captureOnThisThread() {
        return context.gate().capturingOnCurrentThread() || context.ordering().captureBegunOnCurrentThread();
    }

    /** The exception an allocation that could not be rescued throws, with the report, and its event committed. */
    private OutOfDeviceMemoryException fail(OutOfMemoryEvent event, AllocationKind kind, long bytes,
            CudaException first, CudaException last, String outcome, boolean askDriver) {
        OutOfDeviceMemoryException e = new OutOfDeviceMemoryException(last, kind.describe(bytes), bytes,
                reports.take(askDriver));
        if (first != last) {
            e.addSuppressed(first);
        }
        done(event, kind, bytes, outcome);
        return e;
    }

    private void done(OutOfMemoryEvent event, AllocationKind kind, long bytes, String outcome) {
        if (event != null) {
            event.device = context.device();
            event.allocation = kind.toString();
            event.requested = bytes;
            event.outcome = outcome;
            event.commit();
        }
    }

    private void done(OutOfMemoryRungEvent step, Rung rung, boolean retried, boolean rescued) {
        if (step != null) {
            step.device = context.device();
            step.rung = rung.toString();
            step.retried = retried;
            step.rescued = rescued;
            step.commit();
        }
    }
}
