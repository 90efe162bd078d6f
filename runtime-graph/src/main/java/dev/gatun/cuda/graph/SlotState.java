package dev.gatun.cuda.graph;

import dev.gatun.cuda.GraphExec;
import java.util.Arrays;

/**
 * One immutable view of a slot, published through a volatile field so that a replay finds its
 * executables with a single read: no lock, no allocation. Every mutation publishes a new view.
 *
 * <p>It also carries the slot's count of segment launches, so that a replay adds to no counter
 * of its own: each executable counts its launches under the lock its launch takes anyway
 * ({@link GraphExec#launches()}); the view keeps, for each segment, what its executable had
 * counted when it became this slot's ({@link #bases}), and what executables that are no longer
 * segments launched as segments ({@link #folded}). A view that drops an executable folds its
 * launches in only once no replay can launch it (after the slot waited for the replays in
 * flight); until then the view still counts it ({@link #counted}).
 */
final class SlotState {

    private static final GraphExec[] NONE = new GraphExec[0];
    private static final long[] NO_BASES = new long[0];

    static final SlotState IDLE = new SlotState(SlotPhase.IDLE, NONE, false, NO_BASES, 0);

    final SlotPhase phase;
    /** The segments' executables, in capture order; never modified after publication. */
    final GraphExec[] segments;
    /**
     * Set while a re-capture updates or replaces one of these segments' executables: the driver
     * must not launch an executable while it is being updated, so replays are refused meanwhile.
     */
    final boolean updating;
    /** What each executable of {@link #counted} had launched when it became a segment. */
    private final long[] bases;
    /** Launches, as segments of this slot, of executables that no longer are. */
    private final long folded;
    /**
     * The executables whose launches count now: the segments, or, while a reset or retirement
     * waits for the replays in flight, the segments it dropped (replays may still launch them).
     */
    private final GraphExec[] counted;

    private SlotState(SlotPhase phase, GraphExec[] segments, boolean updating, long[] bases, long folded) {
        this(phase, segments, updating, bases, folded, segments);
    }

    private SlotState(SlotPhase phase, GraphExec[] segments, boolean updating, long[] bases, long folded,
            GraphExec[] counted) {
        this.phase = phase;
        this.segments = segments;
        this.updating = updating;
        this.bases = bases;
        this.folded = folded;
        this.counted = counted;
    }

    boolean replayable() {
        return segments.length > 0 && !updating;
    }

    /** The segment launches counted so far: a read may lag a launch in progress. */
    long segmentLaunches() {
        long n = folded;
        for (int i = 0; i < counted.length; i++) {
            n += counted[i].launches() - bases[i];
        }
        return n;
    }

    /** The view with no capture open: IDLE or READY with these same segments. */
    SlotState settled() {
        return settled(segments, bases, folded);
    }

    SlotState capturing() {
        return new SlotState(SlotPhase.CAPTURING, segments, false, bases, folded);
    }

    SlotState updating() {
        return new SlotState(SlotPhase.CAPTURING, segments, true, bases, folded);
    }

    SlotState appended(GraphExec segment) {
        GraphExec[] next = Arrays.copyOf(segments, segments.length + 1);
        next[segments.length] = segment;
        long[] nextBases = Arrays.copyOf(bases, bases.length + 1);
        nextBases[bases.length] = segment.launches();
        return settled(next, nextBases, folded);
    }

    /** Segment {@code index} replaced; call only once no replay can launch the executable it drops. */
    SlotState replaced(int index, GraphExec segment) {
        GraphExec[] next = segments.clone();
        next[index] = segment;
        long[] nextBases = bases.clone();
        nextBases[index] = segment.launches();
        return settled(next, nextBases, folded + segments[index].launches() - bases[index]);
    }

    /**
     * {@code phase} (IDLE or RETIRED) with no segment, while replays in flight may still launch
     * this view's: they are counted until {@link #drained()}.
     */
    SlotState dropping(SlotPhase phase) {
        return new SlotState(phase, NONE, false, bases, folded, counted);
    }

    /** This dropping view once no replay can launch what it dropped: their launches folded in. */
    SlotState drained() {
        return new SlotState(phase, NONE, false, NO_BASES, segmentLaunches());
    }

    private static SlotState settled(GraphExec[] segments, long[] bases, long folded) {
        return new SlotState(segments.length == 0 ? SlotPhase.IDLE : SlotPhase.READY, segments, false, bases, folded);
    }
}
