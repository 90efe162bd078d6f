package dev.gatun.cuda.graph;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * Stands in for the context's retirement queue. By default it keeps what it is handed until the
 * test declares the GPU done ({@link #completeAll()}); an immediate one frees at once, as if every
 * launch had already completed, which is only sound because a slot hands an executable over after
 * no replay can still be launching it.
 */
final class CollectingRetirement implements GraphRetirement {

    private final boolean immediate;
    private final List<RetiredSegment> pending = new ArrayList<>();
    private int received;

    CollectingRetirement() {
        this(false);
    }

    CollectingRetirement(boolean immediate) {
        this.immediate = immediate;
    }

    @Override
    public synchronized void retire(RetiredSegment segment) {
        received++;
        if (immediate) {
            segment.destroy();
        } else {
            pending.add(segment);
        }
    }

    synchronized int received() {
        return received;
    }

    synchronized List<RetiredSegment> pending() {
        return List.copyOf(pending);
    }

    /**
     * Frees everything handed over so far. A segment whose destroy throws stays pending, with
     * those after it, so that a later call retries them as a retirement queue would.
     */
    synchronized void completeAll() {
        for (Iterator<RetiredSegment> it = pending.iterator(); it.hasNext();) {
            it.next().destroy();
            it.remove();
        }
    }
}
