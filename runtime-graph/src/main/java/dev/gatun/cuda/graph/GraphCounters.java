package dev.gatun.cuda.graph;

/**
 * What a slot (or all slots of a {@link GraphLifecycles}) has done.
 *
 * @param captures captures that installed a segment: appended, updated in place, put in the
 *     spare or re-instantiated
 * @param replays replays that launched every segment they asked for ({@code replay} and
 *     {@code replaySegment} both count one)
 * @param segmentLaunches executables launched, including those of a replay that failed part-way
 * @param updatesInPlace re-captures applied to the existing executable (same topology)
 * @param spareUpdates re-captures the existing executable refused and the slot's spare executable
 *     took, which then replaced it (the shape of an earlier capture)
 * @param reinstantiations re-captures that neither the existing executable nor the spare took, so
 *     a new executable replaced the old
 * @param aborts captures abandoned with {@code abortCapture}
 * @param resets resets (each drops every segment; an empty slot's reset counts too)
 */
public record GraphCounters(long captures, long replays, long segmentLaunches, long updatesInPlace,
        long spareUpdates, long reinstantiations, long aborts, long resets) {

    /** Nothing done yet. */
    public static final GraphCounters ZERO = new GraphCounters(0, 0, 0, 0, 0, 0, 0, 0);

    GraphCounters plus(GraphCounters other) {
        return new GraphCounters(captures + other.captures, replays + other.replays,
                segmentLaunches + other.segmentLaunches, updatesInPlace + other.updatesInPlace,
                spareUpdates + other.spareUpdates, reinstantiations + other.reinstantiations, aborts + other.aborts,
                resets + other.resets);
    }
}
