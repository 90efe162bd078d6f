package dev.gatun.cuda.graph;

import java.util.HashSet;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The graph lifecycles of one context, keyed by (owner, slot): owners register here, each owner
 * holds named {@link GraphSlot}s, and every slot drives the same backend and hands what it drops
 * to the same retirement.
 *
 * <pre>{@code
 * GraphOwner<Stream> session = graphs.registerOwner("session-1");
 * GraphSlot<Stream> decode = session.slot("decode");
 * decode.beginCapture(stream, CaptureMode.THREAD_LOCAL);
 * ... enqueue kernels on stream ...
 * decode.endCapture();
 * decode.replay(stream);         // per request: no lock, no allocation
 * session.retire();              // at shutdown: every slot at once
 * }</pre>
 *
 * @param <S> the stream type
 */
public final class GraphLifecycles<S> {

    private final GraphBackend<S> backend;
    private final GraphRetirement retirement;
    private final ReentrantLock lock = new ReentrantLock();
    // Guarded by lock.
    private final Set<GraphOwner<S>> live = new HashSet<>();
    private GraphCounts retiredCounts = GraphCounts.ZERO;

    public GraphLifecycles(GraphBackend<S> backend, GraphRetirement retirement) {
        this.backend = Objects.requireNonNull(backend, "backend");
        this.retirement = Objects.requireNonNull(retirement, "retirement");
    }

    /**
     * Registers a new owner. Names are for messages and logs; two owners may share one.
     *
     * @throws IllegalArgumentException when {@code name} is blank
     */
    public GraphOwner<S> registerOwner(String name) {
        GraphOwner<S> owner = new GraphOwner<>(this, Names.require(name, "owner name"));
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
            for (GraphOwner<S> owner : live) {
                sum = sum.plus(owner.counts());
            }
            return sum;
        } finally {
            lock.unlock();
        }
    }

    GraphBackend<S> backend() {
        return backend;
    }

    GraphRetirement retirement() {
        return retirement;
    }

    /** Folds a retired owner's final counts into the totals; its slots no longer change them. */
    void ownerRetired(GraphOwner<S> owner) {
        lock.lock();
        try {
            live.remove(owner);
            retiredCounts = retiredCounts.plus(owner.counts());
        } finally {
            lock.unlock();
        }
    }
}
