package dev.gatun.cuda.graph;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Graph lifecycles keyed by (owner, slot): owners register here, and each owner holds named
 * {@link GraphSlot}s. A slot captures on whatever stream it is given; the executables it
 * installs belong to that stream's context.
 *
 * <pre>{@code
 * GraphOwner session = lifecycles.registerOwner("session-1");
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
    private final Set<GraphOwner> live = new HashSet<>();
    private GraphCounts retiredCounts = GraphCounts.ZERO;

    /**
     * Registers a new owner. Names are for messages and logs; two owners may share one.
     *
     * @throws IllegalArgumentException when {@code name} is blank
     */
    public GraphOwner registerOwner(String name) {
        GraphOwner owner = new GraphOwner(this, Names.require(name, "owner name"));
        lock.lock();
        try {
            live.add(owner);
        } finally {
            lock.unlock();
        }
        return owner;
    }

    /** Owners registered and not yet retired. */
    public int liveOwners() {
        lock.lock();
        try {
            return live.size();
        } finally {
            lock.unlock();
        }
    }

    /** Counts over every slot this registry has had, retired owners included. */
    public GraphCounts totals() {
        lock.lock();
        try {
            GraphCounts sum = retiredCounts;
            for (GraphOwner owner : live) {
                sum = sum.plus(owner.counts());
            }
            return sum;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Retires every live owner (see {@link GraphOwner#retire()}).
     *
     * @throws GraphStateException when a slot is capturing; the owners without an open capture
     *     are retired all the same, the others stay (end or abort their captures, then retry)
     */
    public void retireAll() {
        List<GraphOwner> owners;
        lock.lock();
        try {
            owners = List.copyOf(live);
        } finally {
            lock.unlock();
        }
        RuntimeException first = null;
        for (GraphOwner owner : owners) {
            try {
                owner.retire();
            } catch (RuntimeException e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }

    /** Folds a retired owner's final counts into the totals; its slots no longer change them. */
    void ownerRetired(GraphOwner owner) {
        lock.lock();
        try {
            live.remove(owner);
            retiredCounts = retiredCounts.plus(owner.counts());
        } finally {
            lock.unlock();
        }
    }
}
