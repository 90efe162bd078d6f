package dev.gatun.cuda.internal.context;

import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.internal.driver.CuResults;
import dev.gatun.cuda.internal.events.RetirementBacklogEvent;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A context's deferred frees. A resource is freed once every item of its evidence is complete;
 * the queue is reaped at safe points and never blocks: evidence is polled, and a free that
 * synchronizes the device is deferred while a global-mode capture holds the gate.
 *
 * <p>A failed free is logged with the owner's identity and retried at later reaps, up to
 * {@link #MAX_FREE_ATTEMPTS}; it is never repeated within one reap, and never thrown to the
 * caller of {@code close()}. After a sticky error the context can free nothing more: entries
 * whose free calls the driver are then abandoned (one log line each, counted) instead of
 * retried forever, while those that only drop Java references (a kernel's hold on its
 * module) still run, so that everything they hold is retired, and abandoned, in turn.
 */
public final class RetirementQueue {

    static final int MAX_FREE_ATTEMPTS = 3;
    private static final Logger LOG = LoggerFactory.getLogger(RetirementQueue.class);

    /** What the queue needs from its context. */
    public interface Host {
        /**
         * Whether the calling thread may call the driver: false while it runs a host callback.
         * (Each free makes the context current itself, immediately before its call: a reap can
         * park between two frees, on the gate's lock for one, and a virtual thread then resumes
         * on another carrier, where another context may be current.)
         */
        boolean callsAllowedHere();

        /** Whether the context has been poisoned by a sticky error. */
        boolean poisoned();

        CaptureGate gate();

        /** Counts one retirement outcome; {@code identity} names the handle (see {@link Retirement#identity()}). */
        void retired(Object identity, boolean freed);

        /** Counts a handle abandoned because the context is poisoned. */
        void abandoned(Retirement retirement);

        /** A readable name for a CUresult, for logs. */
        String resultName(int result);
    }

    private static final class Entry {
        final Retirement retirement;
        final boolean[] done;
        int freeFailures;

        Entry(Retirement retirement) {
            this.retirement = retirement;
            this.done = new boolean[retirement.evidence().size()];
        }
    }

    private final Host host;
    private final ReentrantLock reaping = new ReentrantLock();
    private final Object queueLock = new Object();
    /** The smallest backlog reported to JFR (then 128, 256, ...). */
    private static final int BACKLOG_REPORTED_FROM = 64;
    private final List<Entry> incoming = new ArrayList<>();
    private final List<Entry> waiting = new ArrayList<>();
    private volatile int pending;

    public RetirementQueue(Host host) {
        this.host = host;
    }

    /** Hands a resource over. Tries to free it at once (without blocking) when its evidence allows. */
    public void submit(Retirement retirement) {
        enqueue(new Entry(retirement));
        reap();
    }

    /** Adds {@code entry} to the entries the next reap takes, and counts it pending. */
    private void enqueue(Entry entry) {
        int now;
        synchronized (queueLock) {
            incoming.add(entry);
            now = ++pending;
        }
        if (now >= BACKLOG_REPORTED_FROM && Integer.bitCount(now) == 1) {
            reportBacklog(now);
        }
    }

    /**
     * Retires a handle that no queued work can use (it has no evidence to wait for): frees it
     * now, on the calling thread, as the C caller frees it, without the queue's entry and list,
     * when that needs no wait (no other thread is reaping, the context is live, this thread may
     * call the driver, and a synchronizing free enters the gate at once). It frees under the reaping lock, as a
     * reap does, and then reaps what the free let go of. Otherwise it is queued as
     * {@link #submit} queues it; a failed free counts as its first attempt and waits for the
     * next reap.
     *
     * @param identity names the handle, as {@link Retirement#identity()}
     */
    public void freeNowOrSubmit(Object identity, OwnerKind kind, Retirement.Release release, boolean synchronizing) {
        // Inside a reap already (a free that let go of this handle), or with another thread
        // reaping, the queue takes it: a reap in progress frees it with the queue's rules.
        if (reaping.isHeldByCurrentThread() || !reaping.tryLock()) {
            submit(new Retirement(identity, kind, List.of(), release, synchronizing));
            return;
        }
        try {
            Entry failed = null;
            // A release that makes no driver call (it drops Java references) needs no live context
            // (it may run on a thread that must not call the driver, a host callback's).
            if (release.callsDriver() && (host.poisoned() || !host.callsAllowedHere())
                    || synchronizing && !host.gate().tryEnterSynchronizing()) {
                // Poisoned, inside a host callback, or a global-mode capture is active: the reap
                // below decides (abandons, or defers), and never waits.
                enqueue(new Entry(new Retirement(identity, kind, List.of(), release, synchronizing)));
            } else {
                int r;
                try {
                    r = release.free();
                } finally {
                    if (synchronizing) {
                        host.gate().exitSynchronizing();
                    }
                }
                if (r == 0) {
                    host.retired(identity, true);
                } else {
                    Entry entry = new Entry(new Retirement(identity, kind, List.of(), release, synchronizing));
                    failed = failedAttempt(entry, r) ? null : entry;
                }
            }
            // What the free let go of (a graph's allocations) was submitted meanwhile: reaped now,
            // under this lock, as a reap frees what its frees release.
            if (pending > 0) {
                reapLocked(false);
            }
            if (failed != null) {
                // After that reap: a failed free waits for the next one.
                waiting.add(failed);
                synchronized (queueLock) {
                    ++pending;
                }
            }
        } finally {
            reaping.unlock();
        }
    }

    /** A JFR event each time the backlog reaches another power of two from 64: handles pile up behind the GPU. */
    private void reportBacklog(int now) {
        RetirementBacklogEvent event = RetirementBacklogEvent.start();
        if (event != null) {
            event.context = host.toString();
            event.pending = now;
            event.commit();
        }
    }

    /** Entries not freed yet. */
    public int pending() {
        return pending;
    }

    /**
     * Polls every entry and frees those whose evidence is complete. Never blocks on the GPU;
     * if another thread is reaping, returns at once (that thread will see the new entries).
     *
     * @return how many entries were freed or abandoned by this call
     */
    public int reap() {
        // A free may retire something else (a kernel's free drops its module's last
        // reference); that submission must not re-enter the reap in progress on this thread,
        // which picks new entries up in its next round instead.
        if (pending == 0 || reaping.isHeldByCurrentThread() || !reaping.tryLock()) {
            return 0;
        }
        try {
            return reapLocked(false);
        } finally {
            reaping.unlock();
        }
    }

    /**
     * Frees everything, on the strength of a completed device-wide synchronization that the
     * caller has just performed: after it, every piece of evidence is complete by definition.
     * Used at context shutdown only.
     */
    public int drainAfterSynchronize() {
        reaping.lock();
        try {
            return reapLocked(true);
        } finally {
            reaping.unlock();
        }
    }

    /**
     * For the out-of-memory ladder (with no stream's lock held): blocks until the evidence of each
     * queued retirement that {@code worthWaiting} selects is complete, where it can be waited for,
     * then frees what is due, as a reap does. It waits only inside a synchronizing section of the
     * gate, so never while a global-mode capture is active (it then only reaps), and under the
     * reaping lock, so no other reaper releases the evidence it waits on.
     *
     * @return how many entries were freed or abandoned
     */
    public int awaitAndReap(Predicate<Retirement> worthWaiting) {
        reaping.lock();
        try {
            takeIncoming();
            if (!host.poisoned() && host.gate().tryEnterSynchronizing()) {
                try {
                    for (Entry entry : waiting) {
                        if (worthWaiting.test(entry.retirement)) {
                            awaitEvidence(entry);
                        }
                    }
                } finally {
                    host.gate().exitSynchronizing();
                }
            }
            return reapLocked(false);
        } finally {
            reaping.unlock();
        }
    }

    /** Waits for each item of the entry's evidence not yet complete (a poll first: a complete one costs no wait). */
    private void awaitEvidence(Entry entry) {
        List<Evidence> evidence = entry.retirement.evidence();
        for (int i = 0; i < evidence.size(); i++) {
            if (!entry.done[i]) {
                Evidence e = evidence.get(i);
                int r = e.poll();
                entry.done[i] = r == 0 || r == Evidence.PENDING && e.await() == 0;
            }
        }
    }

    /** Moves the entries submitted since the last round to the waiting list; whether there were any. */
    private boolean takeIncoming() {
        synchronized (queueLock) {
            boolean more = !incoming.isEmpty();
            for (int i = 0; i < incoming.size(); i++) {
                waiting.add(incoming.get(i)); // not addAll: that copies into a new array
            }
            incoming.clear(); // kept, with its array: a reap per close must not allocate a list
            return more;
        }
    }

    private int reapLocked(boolean synchronizedDevice) {
        int total = 0;
        while (true) {
            boolean more = takeIncoming();
            if (!more && total > 0) {
                return total;
            }
            int finished = reapRound(synchronizedDevice);
            total += finished;
            if (finished == 0) {
                return total;
            }
        }
    }

    private int reapRound(boolean synchronizedDevice) {
        if (waiting.isEmpty() || !host.callsAllowedHere() && !host.poisoned()) {
            return 0;
        }
        int finished = 0;
        boolean inSection = false;
        try {
            for (Iterator<Entry> it = waiting.iterator(); it.hasNext();) {
                Entry entry = it.next();
                if (host.poisoned()) {
                    Retirement.Release release = entry.retirement.release();
                    if (release.callsDriver()) {
                        LOG.warn("Abandoning {}: the context is poisoned by a sticky error, so the driver cannot free it",
                                entry.retirement.identity());
                        release.abandoned();
                        host.abandoned(entry.retirement);
                    } else {
                        host.retired(entry.retirement.identity(), release.free() == 0);
                    }
                    releaseEvidence(entry);
                    it.remove();
                    finished++;
                    continue;
                }
                if (!synchronizedDevice && !evidenceComplete(entry)) {
                    continue;
                }
                if (entry.retirement.synchronizing() && !inSection) {
                    if (!host.gate().tryEnterSynchronizing()) {
                        continue; // a global capture is active: defer, never wait
                    }
                    inSection = true;
                }
                int r = entry.retirement.release().free();
                if (r == 0) {
                    releaseEvidence(entry);
                    host.retired(entry.retirement.identity(), true);
                    it.remove();
                    finished++;
                } else if (failedAttempt(entry, r)) {
                    it.remove();
                    finished++;
                }
            }
        } finally {
            if (inSection) {
                host.gate().exitSynchronizing();
            }
            synchronized (queueLock) {
                pending -= finished;
            }
        }
        return finished;
    }

    private boolean evidenceComplete(Entry entry) {
        List<Evidence> evidence = entry.retirement.evidence();
        boolean all = true;
        for (int i = 0; i < evidence.size(); i++) {
            if (entry.done[i]) {
                continue;
            }
            int r = evidence.get(i).poll();
            if (r == 0) {
                entry.done[i] = true;
            } else {
                all = false;
                if (r != Evidence.PENDING) {
                    LOG.debug("Completion evidence for {} could not be read ({}); will poll again",
                            entry.retirement.identity(), host.resultName(r));
                }
            }
        }
        return all;
    }

    private void releaseEvidence(Entry entry) {
        for (Evidence e : entry.retirement.evidence()) {
            e.release();
        }
    }

    /**
     * Counts a failed free of {@code entry} (result {@code r}): true when that was its last
     * attempt and it was given up. A free the driver answered with {@code CUDA_ERROR_INVALID_HANDLE}
     * is given up at once: the driver does not know the handle (a destroy may have taken effect
     * and reported failure after), and a retry could name a handle the driver has handed out again
     * since, destroying someone else's stream or event.
     */
    private boolean failedAttempt(Entry entry, int r) {
        if (r == CuResults.INVALID_HANDLE) {
            entry.freeFailures++;
            abandon(entry, "the driver answered " + host.resultName(r) + ", so it is never retried");
            return true;
        }
        if (++entry.freeFailures >= MAX_FREE_ATTEMPTS) {
            abandon(entry, "free failed " + entry.freeFailures + " times, last with " + host.resultName(r));
            return true;
        }
        LOG.warn("Freeing {} failed with {}; will retry at the next reap (attempt {} of {})",
                entry.retirement.identity(), host.resultName(r), entry.freeFailures, MAX_FREE_ATTEMPTS);
        return false;
    }

    private void abandon(Entry entry, String why) {
        LOG.error("Leaking {}: {}", entry.retirement.identity(), why);
        // Only the handle is leaked: its evidence completed before the first attempt, so the
        // pooled events it holds go back to the pool, and what the owner kept alive for the
        // handle's work (an executable's graphs and buffers) can go too.
        releaseEvidence(entry);
        entry.retirement.release().abandoned();
        host.retired(entry.retirement.identity(), false);
    }
}
