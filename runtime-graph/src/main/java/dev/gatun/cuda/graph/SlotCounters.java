package dev.gatun.cuda.graph;

import dev.gatun.cuda.GraphInstallCounters;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.LongSupplier;

/**
 * A slot's live counters. One array keeps them in one object; a replay bumps one of them with an
 * atomic add, which neither locks nor allocates. Its segment launches are counted by the
 * executables themselves ({@link SlotState#segmentLaunches()}), how re-captures were installed by
 * the slot's {@link dev.gatun.cuda.GraphInstaller}.
 */
final class SlotCounters {

    static final int CAPTURES = 0;
    static final int REPLAYS = 1;
    static final int ABORTS = 2;
    static final int RESETS = 3;

    private final AtomicLongArray counts = new AtomicLongArray(4);

    void add(int counter, long delta) {
        counts.getAndAdd(counter, delta);
    }

    /**
     * These counters with the segment launches {@code segmentLaunches} counts (read after the
     * replays) and {@code installs}, the re-captures by the way each was installed.
     */
    GraphCounters snapshot(LongSupplier segmentLaunches, GraphInstallCounters installs) {
        long captures = counts.get(CAPTURES);
        long replays = counts.get(REPLAYS);
        return new GraphCounters(captures, replays, segmentLaunches.getAsLong(),
                installs.updates(), installs.spareUpdates(), installs.instantiations(), counts.get(ABORTS),
                counts.get(RESETS));
    }
}
