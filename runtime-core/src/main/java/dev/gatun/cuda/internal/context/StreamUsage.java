package dev.gatun.cuda.internal.context;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The streams an owner's handle was used on, so that retirement can wait for the last use on
 * each. Most handles are used on at most one stream (a stream-ordered buffer, a buffer of one
 * pipeline stage), so the origin and the first other stream are kept in fields, and an array is
 * made only when a third one appears.
 *
 * <p><b>Listing only grows within a life.</b> A stream once listed stays listed until
 * {@link #reset} (a recycled resource's next life): nothing is ever withdrawn. That is what lets
 * the readers below go without a lock, and what makes a use and a close a Dekker pair
 * ({@link NativeResource#usedOn}): a use lists its stream and then reads the closed state; a
 * close writes the closed state and then reads this list; a listing the close's read missed is
 * therefore followed by a read that sees the close. A use refused after listing leaves its
 * stream listed. It is not withdrawn because another use of the same stream may have found it
 * listed in between and relied on it (the context's synchronous stream is used without a lock),
 * and because it costs only a fence: the retirement that reads it records one more event, on
 * that stream, and a stream-ordered buffer is then freed after the fences instead of at once in
 * its stream's order.
 *
 * <p>Costs, on the hot paths: recording a use of the stream used last, or of the stream a
 * handle was created on ({@link #StreamUsage(StreamState) origin}: a stream-ordered
 * allocation's), takes no lock, writes nothing and allocates nothing; a new stream takes a short
 * lock. Reading the {@linkplain #sole() sole stream} at close takes no lock either: the fields it
 * reads are written under the lock and published by volatile writes.
 */
final class StreamUsage {

    /**
     * The stream the handle was created on, listed from the start; null for a handle made outside
     * any stream. Set before the owner is published (by construction, or by {@link #reset} before
     * the owner's release-store claim), so no thread sees the handle with no stream, which would
     * free it unfenced.
     */
    private StreamState origin;
    /** The stream used last, other than the origin, once listed; null until such a use. */
    private volatile StreamState last;
    /** Written under this lock: the first stream used other than the origin, else null. */
    private volatile StreamState first;
    /** Written under this lock: every further stream used (an array never changed once published), else null. */
    private volatile StreamState[] more;
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
     * the resource is published again (its owner's release-store claim). A use refused late (its
     * handle lost the resource while it listed its stream) may still be listing under this lock:
     * the clear takes it when there is anything to clear, so it never interleaves with such a
     * listing; when there is nothing, a late listing lands whole in the next life, as one extra
     * stream (see the class comment).
     */
    void reset(StreamState origin) {
        SwitchPoint.USAGE_RESET.reach();
        this.origin = origin;
        // The allocation hot path (a buffer used on its allocation stream alone) set none of
        // them: four volatile reads and no lock then.
        if (last != null || first != null || more != null || foreign) {
            synchronized (this) {
                last = null;
                first = null;
                more = null;
                foreign = false;
            }
        }
    }

    /** Records use on {@code stream}; {@code owner} is the context the handle belongs to. */
    void add(StreamState stream, ContextState owner) {
        SwitchPoint.USAGE_ADD.reach();
        if (stream == origin || stream == last) {
            return;
        }
        synchronized (this) {
            if (stream != origin && stream != first && !contains(more, stream)) {
                if (first == null) {
                    first = stream;
                } else {
                    StreamState[] m = more;
                    StreamState[] next = m == null ? new StreamState[1] : Arrays.copyOf(m, m.length + 1);
                    next[next.length - 1] = stream;
                    more = next; // published whole: a reader sees the old array or the new one
                }
            }
            if (stream.context() != owner && !foreign) {
                foreign = true;
            }
            last = stream; // after the listing: a use that finds it here finds it listed
        }
    }

    private static boolean contains(StreamState[] streams, StreamState s) {
        if (streams != null) {
            for (StreamState x : streams) {
                if (x == s) {
                    return true;
                }
            }
        }
        return false;
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
        StreamState[] m = more;
        StreamState f = first;
        StreamState o = origin;
        if (m == null && (f == null || f == except) && (o == null || o == except)) {
            return into;
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
        List<Evidence> fences = new ArrayList<>(streams.size());
        for (StreamState s : streams) {
            fences.add(s.fence());
        }
        return fences;
    }

    /** Whether any stream used the handle. */
    boolean any() {
        SwitchPoint.USAGE_READ.reach();
        return more != null || first != null || origin != null;
    }

    /**
     * The only stream used, or null when none or several were. Lock-free: listing only grows, so
     * a stream seen here stays listed, and "several" once seen stays true.
     */
    StreamState sole() {
        SwitchPoint.USAGE_READ.reach();
        if (more != null) {
            return null;
        }
        StreamState f = first;
        StreamState o = origin;
        if (f == null) {
            return o;
        }
        return o == null ? f : null;
    }

    private synchronized List<StreamState> all() {
        SwitchPoint.USAGE_READ.reach();
        List<StreamState> out = new ArrayList<>(2 + (more == null ? 0 : more.length));
        if (origin != null) {
            out.add(origin);
        }
        if (first != null) {
            out.add(first);
        }
        if (more != null) {
            out.addAll(Arrays.asList(more));
        }
        return out;
    }
}
