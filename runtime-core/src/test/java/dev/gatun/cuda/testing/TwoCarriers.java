package dev.gatun.cuda.testing;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Two platform threads, carrier-A and carrier-B, that carry the virtual threads of
 * {@link #virtualThreads}: every mount (a start, or a resume after a park) runs on the carrier
 * {@link #mountOnA}/{@link #mountOnB} chose last, so a test decides where a virtual thread
 * resumes instead of sampling it. {@link #mounts()} lists where each mount ran.
 */
public final class TwoCarriers implements AutoCloseable {

    private final ExecutorService a = Executors.newSingleThreadExecutor(r -> new Thread(r, "carrier-A"));
    private final ExecutorService b = Executors.newSingleThreadExecutor(r -> new Thread(r, "carrier-B"));
    private final List<String> mounts = Collections.synchronizedList(new ArrayList<>());
    private volatile ExecutorService next = a;
    private final Thread.Builder.OfVirtual virtualThreads = Carriers.virtualThreadsOn(task -> {
        ExecutorService on = next;
        mounts.add(on == a ? "carrier-A" : "carrier-B");
        on.execute(task);
    });

    /** Virtual threads that these two carriers run (A until {@link #mountOnB}). */
    public Thread.Builder.OfVirtual virtualThreads() {
        return virtualThreads;
    }

    /** The next mounts run on carrier A. */
    public void mountOnA() {
        next = a;
    }

    /** The next mounts run on carrier B. */
    public void mountOnB() {
        next = b;
    }

    /** Where each mount ran so far ("carrier-A", "carrier-B"), in order. */
    public List<String> mounts() {
        return List.copyOf(mounts);
    }

    /** Runs {@code work} on carrier A as a plain task (the carrier itself, no virtual thread); returns its thread. */
    public Thread runOnA(Runnable work) throws InterruptedException, ExecutionException {
        return runOn(a, work);
    }

    /** Runs {@code work} on carrier B as a plain task; returns its thread. */
    public Thread runOnB(Runnable work) throws InterruptedException, ExecutionException {
        return runOn(b, work);
    }

    private static Thread runOn(ExecutorService carrier, Runnable work) throws InterruptedException, ExecutionException {
        try {
            return carrier.submit(() -> {
                work.run();
                return Thread.currentThread();
            }).get(Interposer.GUARD.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            throw new AssertionError("the carrier did not run the work within " + Interposer.GUARD + " (a deadlock?)", e);
        }
    }

    @Override
    public void close() throws InterruptedException {
        a.shutdown();
        b.shutdown();
        assertTrue(a.awaitTermination(Interposer.GUARD.toMillis(), TimeUnit.MILLISECONDS), "carrier-A still runs");
        assertTrue(b.awaitTermination(Interposer.GUARD.toMillis(), TimeUnit.MILLISECONDS), "carrier-B still runs");
    }
}
