package example.kernelbench;

import java.util.concurrent.atomic.AtomicLong;

/**
 * The GPU time a benchmark measured with events in the current JMH iteration, for
 * {@link GpuTimeProfiler} to report. Adding allocates nothing, so the measured path stays free
 * of allocation.
 */
public final class GpuTime {

    private static final AtomicLong NANOS = new AtomicLong();
    private static final AtomicLong COUNT = new AtomicLong();

    private GpuTime() {
    }

    /** Adds one operation's GPU time, as {@code Event.elapsedMillis} gives it. */
    public static void add(float millis) {
        NANOS.addAndGet(Math.round(millis * 1e6));
        COUNT.incrementAndGet();
    }

    /** Forgets what was added: a new iteration begins. */
    static void reset() {
        NANOS.set(0);
        COUNT.set(0);
    }

    /** {@return how many operations were added since the last reset} */
    static long count() {
        return COUNT.get();
    }

    /** {@return the mean GPU time per operation since the last reset, in microseconds; NaN without any} */
    static double meanMicros() {
        long count = COUNT.get();
        return count == 0 ? Double.NaN : NANOS.get() / 1e3 / count;
    }
}
