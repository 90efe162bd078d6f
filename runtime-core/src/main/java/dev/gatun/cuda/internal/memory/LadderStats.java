package dev.gatun.cuda.internal.memory;

import dev.gatun.cuda.OutOfMemoryCounters;
import java.util.concurrent.atomic.LongAdder;

/** The out-of-memory ladder's running counters; see {@link OutOfMemoryCounters} for each. */
final class LadderStats {
    final LongAdder climbs = new LongAdder();
    final LongAdder retirementRuns = new LongAdder();
    final LongAdder retirementsFreed = new LongAdder();
    final LongAdder trimRuns = new LongAdder();
    final LongAdder bytesTrimmed = new LongAdder();
    final LongAdder synchronizeRuns = new LongAdder();
    final LongAdder failures = new LongAdder();
    final LongAdder skippedInCapture = new LongAdder();
    /** Allocations rescued after each rung, by {@link Rung#ordinal()}. */
    final LongAdder[] rescued = {new LongAdder(), new LongAdder(), new LongAdder()};

    OutOfMemoryCounters snapshot() {
        return new OutOfMemoryCounters(climbs.sum(), retirementRuns.sum(), retirementsFreed.sum(),
                rescued[Rung.RETIREMENT.ordinal()].sum(), trimRuns.sum(), bytesTrimmed.sum(),
                rescued[Rung.TRIM.ordinal()].sum(), synchronizeRuns.sum(), rescued[Rung.SYNCHRONIZE.ordinal()].sum(),
                failures.sum(), skippedInCapture.sum());
    }
}
