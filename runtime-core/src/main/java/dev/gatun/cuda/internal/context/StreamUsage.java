package dev.gatun.cuda.internal.context;

import java.util.ArrayList;
import java.util.List;

/**
 * The streams an owner's handle was used on, so that retirement can wait for the last use on
 * each. Recording a use of the stream used last costs one volatile read and allocates nothing;
 * a new stream takes a short lock.
 */
final class StreamUsage {

    private volatile StreamCore last;
    private final List<StreamCore> streams = new ArrayList<>(2);

    void add(StreamCore stream) {
        if (last == stream) {
            return;
        }
        synchronized (streams) {
            if (!streams.contains(stream)) {
                streams.add(stream);
            }
            last = stream;
        }
    }

    /** One fence per stream used, taken now (at close). */
    List<Evidence> fences() {
        synchronized (streams) {
            List<Evidence> fences = new ArrayList<>(streams.size());
            for (StreamCore s : streams) {
                fences.add(s.fence());
            }
            return fences;
        }
    }

    List<StreamCore> streams() {
        synchronized (streams) {
            return List.copyOf(streams);
        }
    }

    /** The only stream used, or null when none or several were. */
    StreamCore sole() {
        synchronized (streams) {
            return streams.size() == 1 ? streams.get(0) : null;
        }
    }
}
