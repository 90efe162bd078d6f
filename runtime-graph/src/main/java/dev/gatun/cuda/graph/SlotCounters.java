package dev.gatun.cuda.graph;

import dev.gatun.cuda.GraphInstallCounters;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * A slot's live counters. One array keeps them in one object; replays bump two of them with
 * atomic adds, which neither lock nor allocate. How re-captures were installed is counted by the
 * slot's {@link dev.gatun.cuda.GraphInstaller}.
 */
final class SlotCounters {

    static final int CAPTURES = 0;
    static final int REPLAYS = 1;
    static final int SEGMENT_LAUNCHES = 2;
    static final int ABORTS = 3;
    static final int RESETS = 4;

    private final AtomicLongArray counts = new AtomicLongArray(5);

    void add(int counter, long delta) {
        counts.getAndAdd(counter, delta);
    }

    /** These counters with {@code installs}, the re-captures by the way each was installed. */
    GraphCounters snapshot(GraphInstallCounters installs) {
        return new GraphCounters(counts.get(CAPTURES), counts.get(REPLAYS), counts.get(SEGMENT_LAUNCHES),
                installs.updates(), installs.spareUpdates(), installs.instantiations(), counts.get(ABORTS),
                counts.get(RESETS));
    }
}
