package dev.gatun.cuda.internal.context;

import java.util.ArrayList;
import java.util.List;

/**
 * The streams an owner's handle was used on, so that retirement can wait for the last use on
 * each. Most handles are used on at most one stream (a stream-ordered buffer, a buffer of one
 * pipeline stage), so the first stream is kept in a field and a list is made only when a second
 * one appears.
 *
 * <p>Costs, on the hot paths: recording a use of the stream used last, or of the stream a
 * handle was created on ({@link #StreamUsage(StreamState) origin}: a stream-ordered allocation's),
 * takes no lock, writes nothing and allocates nothing; a new stream takes a short lock. Reading
 * the {@linkplain #sole() sole stream} at close takes no lock either: the fields it reads are
 * written under the lock and published by volatile writes.
 */
final class StreamUsage {

    /**
     * The stream the handle was created on, listed from the start; null for a handle made outside
     * any stream. Set before the owner is published (by construction, or by {@link #reset} before
     * the owner's release-store claim), so no thread sees the handle with no stream, which would free it
     * unfenced.
     */
    private StreamState origin;
    /** The stream used last, other than the origin; null until such a use. */
    private volatile StreamState last;
    /** Written under this lock: the first stream used when there is no origin, else null. */
    private volatile StreamState first;
    /** Every stream used, once there are two or more; else null. Set and added to under this lock, read under it but for the null check of {@link #sole()}. */
    private volatile List<StreamState> several;
    /** Whether a stream of another context (a peer copy or launch) used the handle. */
    private volatile boolean foreign;

    /** A handle made outside any stream: no stream listed yet. */
    StreamUsage() {
        this(null);
    }

    /** A handle created in {@code origin}'s order (a stream-ordered allocation), listed as used there from the start. */
    StreamUsage(StreamState origin) {
        this.origin = origin;
    }

    /**
     * Forgets every use, for a recycled resource about to stand for a new handle made on
     * {@code origin}: called by the one thread that took the resource from its recycler, before
     * the resource is published again (its owner's release-store claim), so no other thread reads it.
     */
    void reset(StreamState origin) {
        this.origin = origin;
        // Written only when set: a volatile write costs a full fence, and a buffer used on its
        // allocation stream alone (the allocation hot path) never set any of them. The owner's
        // claim publishes what is written here.
        if (last != null) {
            last = null;
        }
        if (first != null) {
            first = null;
        }
        if (several != null) {
            several = null;
        }
        if (foreign) {
            foreign = false;
        }
    }

    /** Records use on {@code stream}; {@code owner} is the context the handle belongs to. */
    void add(StreamState stream, ContextState owner) {
        if (stream == origin || stream == last) {
            return;
        }
        synchronized (this) {
            StreamState listed = firstListed();
            if (listed == null) {
                first = stream;
            } else if (listed != stream && (several == null || !several.contains(stream))) {
                List<StreamState> all = several;
                if (all == null) {
                    all = new ArrayList<>(4);
                    all.add(listed);
                }
                all.add(stream);
                several = all; // published after the stream is in it
            }
            if (stream.context() != owner) {
                foreign = true;
            }
            last = stream;
        }
    }

    /** The streams of contexts other than {@code owner} that used the handle; empty (and no copy) when none did. */
    List<StreamState> foreignStreams(ContextState owner) {
        if (!foreign) {
            return List.of();
        }
        List<StreamState> out = new ArrayList<>(2);
        for (StreamState s : all()) {
            if (s.context() != owner) {
                out.add(s);
            }
        }
        return out;
    }

    /**
     * Adds to {@code into} (made on first need) every stream used other than {@code except};
     * returns {@code into}. Allocates nothing when {@code except} is the only stream used.
     */
    List<StreamState> addOthers(StreamState except, List<StreamState> into) {
        if (several == null) {
            StreamState listed = firstListed();
            if (listed == null || listed == except) {
                return into;
            }
        }
        List<StreamState> out = into;
        for (StreamState s : all()) {
            if (s != except && (out == null || !out.contains(s))) {
                if (out == null) {
                    out = new ArrayList<>(2);
                }
                out.add(s);
            }
        }
        return out;
    }

    /** One fence per stream used, taken now (at close); empty (and no copy) when none was. */
    List<Evidence> fences() {
        if (!any()) {
            return List.of(); // never used on a stream (a block closed unused): no monitor
        }
        List<StreamState> streams = all();
        if (streams.isEmpty()) {
            return List.of();
        }
        List<Evidence> fences = new ArrayList<>(streams.size());
        for (StreamState s : streams) {
            fences.add(s.fence());
        }
        return fences;
    }

    /** Whether any stream used the handle. */
    boolean any() {
        return several != null || firstListed() != null;
    }

    /** The only stream used, or null when none or several were. Lock-free: once a second stream is recorded, {@code several} stays set. */
    StreamState sole() {
        return several == null ? firstListed() : null;
    }

    private StreamState firstListed() {
        return origin != null ? origin : first;
    }

    private synchronized List<StreamState> all() {
        if (several != null) {
            return List.copyOf(several);
        }
        StreamState listed = firstListed();
        return listed == null ? List.of() : List.of(listed);
    }
}
