package dev.gatun.cuda.graph;

import dev.gatun.cuda.GraphExec;
import java.util.Arrays;

/**
 * One immutable view of a slot, published through a volatile field so that a replay finds its
 * executables with a single read: no lock, no allocation. Every mutation publishes a new view.
 */
final class SlotState {

    private static final GraphExec[] NONE = new GraphExec[0];

    static final SlotState IDLE = new SlotState(SlotPhase.IDLE, NONE, false);
    static final SlotState RETIRED = new SlotState(SlotPhase.RETIRED, NONE, false);

    final SlotPhase phase;
    /** The segments' executables, in capture order; never modified after publication. */
    final GraphExec[] segments;
    /**
     * Set while a re-capture updates or replaces one of these segments' executables: the driver
     * must not launch an executable while it is being updated, so replays are refused meanwhile.
     */
    final boolean updating;

    private SlotState(SlotPhase phase, GraphExec[] segments, boolean updating) {
        this.phase = phase;
        this.segments = segments;
        this.updating = updating;
    }

    boolean replayable() {
        return segments.length > 0 && !updating;
    }

    /** The view with no capture open: IDLE or READY with these same segments. */
    SlotState settled() {
        return settled(segments);
    }

    SlotState capturing() {
        return new SlotState(SlotPhase.CAPTURING, segments, false);
    }

    SlotState updating() {
        return new SlotState(SlotPhase.CAPTURING, segments, true);
    }

    SlotState appended(GraphExec segment) {
        GraphExec[] next = Arrays.copyOf(segments, segments.length + 1);
        next[segments.length] = segment;
        return settled(next);
    }

    SlotState replaced(int index, GraphExec segment) {
        GraphExec[] next = segments.clone();
        next[index] = segment;
        return settled(next);
    }

    private static SlotState settled(GraphExec[] segments) {
        return segments.length == 0 ? IDLE : new SlotState(SlotPhase.READY, segments, false);
    }
}
