package dev.gatun.cuda.internal.context;

import java.util.ArrayList;
import java.util.List;

/**
 * The streams an owner's handle was used on, so that retirement can wait for the last use on
 * each. Recording a use of the stream used last costs one volatile read and allocates nothing;
 * a new stream takes a short lock. The list is made at the first use: many handles (a buffer
 * allocated and closed unused, a pooled block) never have one.
 */
final class StreamUsage {

    private volatile StreamState last;
    /** Guarded by this; null until the first use. */
    private List<StreamState> streams;
    /** Whether a stream of another context (a peer copy or launch) used the handle. */
    private volatile boolean foreign;

    /** Records use on {@code stream}; {@code owner} is the context the handle belongs to. */
    void add(StreamState stream, ContextState owner) {
        if (last == stream) {
            return;
        }
        synchronized (this) {
            if (streams == null) {
                streams = new ArrayList<>(2);
            }
            if (!streams.contains(stream)) {
                streams.add(stream);
                if (stream.context() != owner) {
                    foreign = true;
                }
            }
            last = stream;
        }
    }

    /** The streams of contexts other than {@code owner} that used the handle; empty (and no copy) when none did. */
    List<StreamState> foreignStreams(ContextState owner) {
        if (!foreign) {
            return List.of();
        }
        synchronized (this) {
            List<StreamState> out = new ArrayList<>(streams.size());
            for (StreamState s : streams) {
                if (s.context() != owner) {
                    out.add(s);
                }
            }
            return out;
        }
    }

    /** One fence per stream used, taken now (at close); empty (and no copy) when none was. */
    synchronized List<Evidence> fences() {
        if (streams == null) {
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
        return streams != null && streams.size() == 1 ? streams.get(0) : null;
    }
}
