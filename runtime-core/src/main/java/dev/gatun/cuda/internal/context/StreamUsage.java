package dev.gatun.cuda.internal.context;

import java.util.ArrayList;
import java.util.List;

/**
 * The streams an owner's handle was used on, so that retirement can wait for the last use on
 * each. Recording a use of the stream used last costs one volatile read and allocates nothing;
 * a new stream takes a short lock. Most handles are used on at most one stream (a
 * stream-ordered buffer, a buffer of one pipeline stage), so the first stream is kept in a
 * field and a list is made only when a second one appears.
 */
final class StreamUsage {

    /** The stream used last; null until the first use. */
    private volatile StreamState last;
    /** Guarded by this: the first stream used, or null. */
    private StreamState first;
    /** Guarded by this: every stream used, once there are two or more; else null. */
    private List<StreamState> several;
    /** Whether a stream of another context (a peer copy or launch) used the handle. */
    private volatile boolean foreign;

    /** Records use on {@code stream}; {@code owner} is the context the handle belongs to. */
    void add(StreamState stream, ContextState owner) {
        if (last == stream) {
            return;
        }
        synchronized (this) {
            if (first == null) {
                first = stream;
            } else if (first != stream && (several == null || !several.contains(stream))) {
                if (several == null) {
                    several = new ArrayList<>(4);
                    several.add(first);
                }
                several.add(stream);
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

    /** One fence per stream used, taken now (at close); empty (and no copy) when none was. */
    List<Evidence> fences() {
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

    /** The only stream used, or null when none or several were. */
    synchronized StreamState sole() {
        return several == null ? first : null;
    }

    private synchronized List<StreamState> all() {
        if (several != null) {
            return List.copyOf(several);
        }
        return first == null ? List.of() : List.of(first);
    }
}
