package dev.gatun.cuda.graph;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Graph lifecycles keyed by (group, slot): groups register here, and each group holds named
 * {@link GraphSlot}s. A slot captures on whatever stream it is given; the executables it
 * installs belong to that stream's context.
 *
 * <pre>{@code
 * SlotGroup session = lifecycles.registerGroup("session-1");
 * GraphSlot decode = session.slot("decode");
 * decode.beginCapture(stream, CaptureMode.THREAD_LOCAL);
 * ... enqueue kernels on stream ...
 * decode.endCapture();
 * decode.replay(stream);         // per request: no lock, no allocation
 * session.retire();              // at shutdown: every slot at once
 * }</pre>
 */
public final class GraphLifecycles {

    private final ReentrantLock lock = new ReentrantLock();
    // Guarded by lock.
    private final Set<SlotGroup> live = new HashSet<>();
    private GraphCounters retiredCounts = GraphCounters.ZERO;

    /**
     * An empty registry. {@link CudaGraphs} makes one per context; a caller that manages the
     * validation latch itself, or needs none, may make its own.
     */
    public GraphLifecycles() {
    }

    /**
     * Registers a new group. Names are for messages and logs; two groups may share one.
     *
     * @param name the group's name
     * @return the new group, with no slots yet
     * @throws IllegalArgumentException when {@code name} is blank
     */
    public SlotGroup registerGroup(String name) {
        SlotGroup group = new SlotGroup(this, Names.require(name, "group name"));
        lock.lock();
        try {
            live.add(group);
        } finally {
            lock.unlock();
        }
        return group;
    }

    /** {@return how many groups are registered and not yet retired} */
    public int liveGroups() {
        lock.lock();
        try {
            return live.size();
        } finally {
            lock.unlock();
        }
    }

    /** {@return the counters summed over every slot this registry has had, retired groups included} */
    public GraphCounters counters() {
        lock.lock();
        try {
            GraphCounters sum = retiredCounts;
            for (SlotGroup group : live) {
                sum = sum.plus(group.counters());
            }
            return sum;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Retires every live group (see {@link SlotGroup#retire()}).
     *
     * @throws IllegalStateException when a slot is capturing; the groups without an open capture
     *     are retired all the same, the others stay (end or abort their captures, then retry)
     */
    public void retireAll() {
        List<SlotGroup> groups;
        lock.lock();
        try {
            groups = List.copyOf(live);
        } finally {
            lock.unlock();
        }
        EachOf.run(groups, SlotGroup::retire);
    }

    /** Folds a retired group's final counts into the totals; its slots no longer change them. */
    void groupRetired(SlotGroup group) {
        lock.lock();
        try {
            live.remove(group);
            retiredCounts = retiredCounts.plus(group.counters());
        } finally {
            lock.unlock();
        }
    }
}
