package example.kernelbench;

/**
 * The GPU time a benchmark measured with events in the current JMH iteration, for
 * {@link GpuTimeProfiler} to report. The sum and the count change together under one lock, so a
 * mean is never read between the two halves of an add; the lock is uncontended with JMH's one
 * benchmark thread, and adding allocates nothing, so the measured path stays free of allocation.
 */
public final class GpuTime {

    private static final Object LOCK = new Object();
    private static long nanos;
    private static long count;

    private GpuTime() {
    }

    /** Adds one operation's GPU time, as {@code Event.elapsedMillis} gives it. */
    public static void add(float millis) {
        long n = Math.round(millis * 1e6);
        synchronized (LOCK) {
            nanos += n;
            count++;
        }
    }

    /** Forgets what was added: a new iteration begins. */
    static void reset() {
        synchronized (LOCK) {
            nanos = 0;
            count = 0;
        }
    }

    /** {@return how many operations were added since the last reset} */
    static long count() {
        synchronized (LOCK) {
            return count;
        }
    }

    /** {@return the mean GPU time per operation since the last reset, in microseconds; NaN without any} */
    static double meanMicros() {
        synchronized (LOCK) {
            return count == 0 ? Double.NaN : nanos / 1e3 / count;
        }
    }
}
