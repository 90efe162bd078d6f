package dev.gatun.cuda.graph;

import dev.gatun.cuda.GraphUpdateResult;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * A slot's live counters. One array keeps them in one object; replays bump two of them with
 * atomic adds, which neither lock nor allocate.
 */
final class SlotCounters {

    static final int CAPTURES = 0;
    static final int REPLAYS = 1;
    static final int SEGMENT_LAUNCHES = 2;
    static final int UPDATES_IN_PLACE = 3;
    static final int REINSTANTIATIONS = 4;
    static final int ABORTS = 5;
    static final int RESETS = 6;

    private final AtomicLongArray counts = new AtomicLongArray(7);
    /** Refused in-place updates, by reason (indexed by {@link GraphUpdateResult#ordinal()}). */
    private final AtomicLongArray refusals = new AtomicLongArray(GraphUpdateResult.values().length);

    void add(int counter, long delta) {
        counts.getAndAdd(counter, delta);
    }

    void refused(GraphUpdateResult reason) {
        refusals.getAndIncrement(reason.ordinal());
    }

    /** The refused updates by reason, each reason that occurred once or more. */
    Map<GraphUpdateResult, Long> refusals() {
        Map<GraphUpdateResult, Long> byReason = new EnumMap<>(GraphUpdateResult.class);
        for (GraphUpdateResult r : GraphUpdateResult.values()) {
            long n = refusals.get(r.ordinal());
            if (n > 0) {
                byReason.put(r, n);
            }
        }
        return byReason;
    }

    GraphCounts snapshot() {
        return new GraphCounts(counts.get(CAPTURES), counts.get(REPLAYS), counts.get(SEGMENT_LAUNCHES),
                counts.get(UPDATES_IN_PLACE), counts.get(REINSTANTIATIONS), counts.get(ABORTS),
                counts.get(RESETS));
    }
}
