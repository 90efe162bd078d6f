package dev.gatun.cuda.testing;

import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * One step of an interleaving test run on a thread of its own, whose outcome the test collects:
 * {@link #join()} returns its result or rethrows what it threw, and fails the test, with the
 * thread's stack, if it has not finished within {@link Interposer#GUARD} (a deadlock guard,
 * never a timing assertion).
 *
 * @param <T> what the step returns
 */
public final class Background<T> {

    /** A step that returns nothing and may throw anything. */
    @FunctionalInterface
    public interface Step {
        void run() throws Exception;
    }

    /**
     * How long a thread must be seen waiting, sample after sample, before {@link #awaitFinishedOrWaiting}
     * believes it waits for another thread: long enough to skip a monitor handed over at once,
     * short enough to keep the tests fast. Waiting longer is harmless.
     */
    private static final Duration SETTLED = Duration.ofMillis(30);

    private final Thread thread;
    private final CountDownLatch done = new CountDownLatch(1);
    private volatile T result;
    private volatile Throwable failure;

    private Background(Thread.Builder builder, String name, Callable<T> step) {
        thread = builder.name(name).unstarted(() -> {
            try {
                result = step.call();
            } catch (Throwable t) { // handed to join(), which rethrows it
                failure = t;
            } finally {
                done.countDown();
            }
        });
        thread.setDaemon(true);
    }

    /** Starts {@code step} on a new daemon thread named {@code name}. */
    public static <T> Background<T> call(String name, Callable<T> step) {
        return call(Thread.ofPlatform(), name, step);
    }

    /** Starts {@code step} on a new thread of {@code builder} (a virtual one, say: always a daemon) named {@code name}. */
    public static <T> Background<T> call(Thread.Builder builder, String name, Callable<T> step) {
        Background<T> b = new Background<>(builder, name, step);
        b.thread.start();
        return b;
    }

    /** Starts {@code step} on a new daemon thread named {@code name}. */
    public static Background<Void> run(String name, Step step) {
        return run(Thread.ofPlatform(), name, step);
    }

    /** Starts {@code step} on a new thread of {@code builder} named {@code name}. */
    public static Background<Void> run(Thread.Builder builder, String name, Step step) {
        return call(builder, name, () -> {
            step.run();
            return null;
        });
    }

    public Thread thread() {
        return thread;
    }

    public boolean finished() {
        return done.getCount() == 0;
    }

    /** Waits for the step; returns its result, or rethrows what it threw (checked exceptions wrapped). */
    public T join() {
        Throwable t = joinFailure();
        if (t == null) {
            return result;
        }
        if (t instanceof RuntimeException r) {
            throw r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        throw new IllegalStateException(thread.getName() + " failed", t);
    }

    /** Waits for the step; returns what it threw, or null when it returned normally. */
    public Throwable joinFailure() {
        try {
            if (!done.await(Interposer.GUARD.toMillis(), TimeUnit.MILLISECONDS)) {
                throw stillRunning("finish");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted while waiting for " + thread.getName(), e);
        }
        return failure;
    }

    /**
     * Waits until the step has finished (true) or its thread is seen waiting, steadily for a
     * while, on something other than this test (false): a lock, a condition, a back-off loop.
     * The interleaving tests hold one thread inside a driver call and then run another step
     * here: on code with a race the step finishes; on code that orders it after the held call,
     * it waits, and the test must release the held thread before joining it.
     */
    public boolean awaitFinishedOrWaiting() {
        long deadline = System.nanoTime() + Interposer.GUARD.toNanos();
        long waitingSince = -1;
        while (true) {
            if (finished()) {
                return true;
            }
            long now = System.nanoTime();
            if (ThreadWaits.looksWaiting(thread)) {
                if (waitingSince < 0) {
                    waitingSince = now;
                } else if (now - waitingSince >= SETTLED.toNanos()) {
                    return false;
                }
            } else {
                waitingSince = -1;
            }
            if (now > deadline) {
                throw stillRunning("finish or wait");
            }
            Thread.onSpinWait();
            sleepBriefly();
        }
    }

    private static void sleepBriefly() {
        try {
            Thread.sleep(1);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    private AssertionError stillRunning(String what) {
        AssertionError e = new AssertionError(thread.getName() + " did not " + what + " within " + Interposer.GUARD
                + " (a deadlock?); state " + thread.getState());
        e.setStackTrace(thread.getStackTrace());
        return e;
    }
}
