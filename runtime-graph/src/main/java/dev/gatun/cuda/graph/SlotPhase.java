package dev.gatun.cuda.graph;

/** Where a {@link GraphSlot} stands in its lifecycle. */
public enum SlotPhase {
    /** Nothing captured: no segment, no executable. */
    IDLE,
    /**
     * A capture is open on the slot's stream. Segments captured earlier stay replayable; ending the
     * capture appends a segment (or replaces one), aborting it returns to IDLE or READY unchanged.
     */
    CAPTURING,
    /** One or more segments, each with an executable, replayable in capture order. */
    READY,
    /** The group was retired; the slot holds nothing and refuses every operation. */
    RETIRED
}
