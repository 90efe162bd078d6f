package dev.gatun.cuda.internal.context;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a context's host callbacks threw. A callback runs on the driver's thread, where nothing
 * can be thrown back to the code that queued it, so each exception is logged at ERROR, counted,
 * and kept (the first {@value #KEPT} since the last take) until the application takes them
 * ({@code ContextDiagnostics.takeHostCallbackFailures()}).
 */
public final class HostCallbackFailures {

    private static final Logger LOG = LoggerFactory.getLogger(HostCallbackFailures.class);
    /** How many exceptions are kept between two takes; later ones are counted and logged only. */
    static final int KEPT = 16;

    private final LongAdder count = new LongAdder();
    private final List<Throwable> kept = new ArrayList<>();

    /** Records what the callback {@code which} threw (on the driver's thread: never throws). */
    void record(String which, Throwable e) {
        count.increment();
        synchronized (kept) {
            if (kept.size() < KEPT) {
                kept.add(e);
            }
        }
        LOG.error("{} threw; the graph or stream work after it ran as usual. Take the exception with "
                + "ContextDiagnostics.takeHostCallbackFailures()", which, e);
    }

    /** {@return how many exceptions host callbacks of this context have thrown} */
    public long count() {
        return count.sum();
    }

    /** {@return the exceptions kept since the last take, oldest first}, and forgets them. */
    public List<Throwable> take() {
        synchronized (kept) {
            List<Throwable> out = List.copyOf(kept);
            kept.clear();
            return out;
        }
    }
}
