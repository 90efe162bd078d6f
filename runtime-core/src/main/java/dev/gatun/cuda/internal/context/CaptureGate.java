package dev.gatun.cuda.internal.context;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Keeps device-synchronizing driver calls (synchronous alloc/free, pinned alloc/free, module
 * load/unload, stream/event destroy, context synchronize) apart from global-mode stream
 * captures on one context. Such a call, made while another thread captures in global mode,
 * invalidates that capture; so a synchronizing section waits while a capture is active, and a
 * capture waits until the sections in progress have left.
 *
 * <p>Both sides are shared: any number of sections, or any number of captures, may be inside
 * at once, never both. Sections nest (a section entered inside another never waits). A section
 * asked for by a thread that itself holds a capture fails at once (it would invalidate its own
 * capture, and could never be let in). Waits are bounded; past the bound the caller gets
 * {@link GateException}. Retirement uses {@link #tryEnterSynchronizing()}, which never waits.
 *
 * <p><b>The common path takes no lock.</b> A section counts itself into {@code sections} with one
 * atomic increment and then reads {@code captures}; a capture, under the lock, counts itself into
 * {@code captures} and then reads {@code sections}. All four accesses are volatile (sequentially
 * consistent), so of a section and a capture that overlap, at least one sees the other (a Dekker
 * pair): the section goes to the slow path (the lock: it withdraws its count and waits while a
 * capture is active), or the capture withdraws its count and waits, under the lock, until the
 * sections have drained, then tries again. A capture changes {@code captures} only under the lock,
 * and withdraws before it waits, so whoever holds the lock reads the captures that are really
 * active. While a thread is inside a section, no capture can be active (its count was there
 * before any capture's read could miss it): a nested section that finds a capture's count
 * finds, under the lock, a capture about to withdraw, and goes in. So no thread-local depth is
 * kept. A section's exit decrements {@code sections} and reads {@code drainWaiters} (the other
 * Dekker pair, with a capture that announces its wait before it reads {@code sections}); only the
 * last one out while a capture waits takes the lock, to wake it. Cost of a section without a
 * capture: two locked instructions (the increment and the decrement), no lock, no thread-local.
 */
public final class CaptureGate {

    /** The gate could not be entered: the bound passed, or the thread would block itself. */
    public static final class GateException extends Exception {
        private static final long serialVersionUID = 1L;
        private final boolean selfCapture;

        GateException(String message, boolean selfCapture) {
            super(message, null, false, false);
            this.selfCapture = selfCapture;
        }

        /** True when the calling thread holds the other side itself. */
        public boolean selfCapture() {
            return selfCapture;
        }
    }

    /** Proof of being on the capture side; pass it back to {@link #exitCapture}. */
    public static final class CaptureTicket {
        private final Thread thread;
        private boolean released;

        private CaptureTicket(Thread thread) {
            this.thread = thread;
        }

        public Thread thread() {
            return thread;
        }
    }

    private final ReentrantLock lock = new ReentrantLock();
    /** Signalled when the last capture leaves, and when the sections drain while a capture waits. */
    private final Condition changed = lock.newCondition();
    /** Guarded by {@link #lock}. */
    private final Map<Thread, Integer> capturingThreads = new HashMap<>();
    /** Sections inside, plus sections counted in on the common path that have not yet read {@link #captures}. */
    private final AtomicInteger sections = new AtomicInteger();
    /**
     * Global captures active, plus one that is counting itself in under the lock; written only
     * under {@link #lock}, read without it by the common path.
     */
    private volatile int captures;
    /** Captures waiting, under {@link #lock}, for the sections to drain; written only under the lock. */
    private volatile int drainWaiters;
    private volatile Duration bound;

    public CaptureGate(Duration bound) {
        setBound(bound);
    }

    public Duration bound() {
        return bound;
    }

    public void setBound(Duration bound) {
        if (bound.isNegative()) {
            throw new IllegalArgumentException("gate bound must not be negative: " + bound);
        }
        this.bound = bound;
    }

    /** Enters a synchronizing section, waiting up to the bound while a capture is active. */
    public void enterSynchronizing() throws GateException {
        if (countedIn()) {
            return;
        }
        lock.lock();
        try {
            if (captures == 0) {
                return; // a capture that counted itself in withdrew (or a nested section): stay in
            }
            countOut(); // not inside while waiting, or a waiting capture would wait for this section
            if (capturingThreads.containsKey(Thread.currentThread())) {
                throw new GateException("this thread is capturing in global mode; a synchronizing call here would "
                        + "invalidate its own capture", true);
            }
            long remaining = bound.toNanos();
            while (captures > 0) {
                if (remaining <= 0) {
                    throw new GateException(captures + " global-mode capture(s) still active after waiting "
                            + bound.toMillis() + " ms", false);
                }
                remaining = changed.awaitNanos(remaining);
            }
            // Under the lock no capture is counting itself in: the next one sees this count.
            SwitchPoint.GATE_SECTION_COUNT.reach();
            sections.incrementAndGet();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new GateException("interrupted while waiting for a global-mode capture to end", false);
        } finally {
            lock.unlock();
        }
    }

    /** Enters a section only if no capture is active; never waits. */
    public boolean tryEnterSynchronizing() {
        if (countedIn()) {
            return true;
        }
        lock.lock();
        try {
            if (captures == 0) {
                return true; // as in enterSynchronizing
            }
            countOut();
            return false;
        } finally {
            lock.unlock();
        }
    }

    /**
     * The common path: counts this section in, then reads whether a capture is counted; true
     * when none is (the section is inside), false when the slow path must decide (under the lock)
     * with the count still in.
     */
    private boolean countedIn() {
        SwitchPoint.GATE_SECTION_COUNT.reach();
        sections.incrementAndGet();
        SwitchPoint.CAPTURE_FAST_READ.reach();
        return captures == 0;
    }

    /**
     * @throws IllegalStateException when no section is inside (an exit without its enter)
     */
    public void exitSynchronizing() {
        countOut();
    }

    /** Takes one section's count out; the last one out wakes a capture that waits for the sections to drain. */
    private void countOut() {
        SwitchPoint.GATE_SECTION_COUNT.reach();
        int left = sections.decrementAndGet();
        if (left < 0) {
            sections.incrementAndGet();
            throw new IllegalStateException("exitSynchronizing without a matching enter");
        }
        SwitchPoint.GATE_DRAIN.reach();
        if (left == 0 && drainWaiters > 0) {
            lock.lock();
            try {
                changed.signalAll();
            } finally {
                lock.unlock();
            }
        }
    }

    /** Enters the capture side, waiting up to the bound for synchronizing sections to leave. */
    public CaptureTicket enterCapture() throws GateException {
        lock.lock();
        try {
            long remaining = bound.toNanos();
            while (true) {
                SwitchPoint.GATE_CAPTURE_COUNT.reach();
                captures++;
                SwitchPoint.GATE_SECTIONS_READ.reach();
                if (sections.get() == 0) {
                    break; // every later section sees this count and waits
                }
                // A section is inside (or counting itself in): withdraw, so that a section that
                // saw this count can go in, and wait until the sections drain.
                // (No section waits on the lock for this count to go: a section reads, under the
                // lock, only the captures that are active.)
                SwitchPoint.GATE_CAPTURE_COUNT.reach();
                captures--;
                SwitchPoint.GATE_DRAIN.reach();
                drainWaiters++;
                try {
                    SwitchPoint.GATE_SECTIONS_READ.reach();
                    while (sections.get() > 0) {
                        if (remaining <= 0) {
                            throw new GateException(sections.get() + " synchronizing call(s) still running after "
                                    + "waiting " + bound.toMillis() + " ms", false);
                        }
                        remaining = changed.awaitNanos(remaining);
                    }
                } finally {
                    drainWaiters--;
                }
            }
            capturingThreads.merge(Thread.currentThread(), 1, Integer::sum);
            return new CaptureTicket(Thread.currentThread());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new GateException("interrupted while waiting for synchronizing calls to finish", false);
        } finally {
            lock.unlock();
        }
    }

    /** Leaves the capture side; any thread may end a capture. A second exit is a no-op. */
    public void exitCapture(CaptureTicket ticket) {
        lock.lock();
        try {
            if (ticket.released) {
                return;
            }
            ticket.released = true;
            capturingThreads.computeIfPresent(ticket.thread, (t, n) -> n == 1 ? null : n - 1);
            SwitchPoint.GATE_CAPTURE_COUNT.reach();
            if (--captures == 0) {
                changed.signalAll();
            }
        } finally {
            lock.unlock();
        }
    }

    /** Whether the calling thread began a global-mode capture that has not ended. */
    public boolean capturingOnCurrentThread() {
        SwitchPoint.CAPTURE_FAST_READ.reach();
        if (captures == 0) {
            return false;
        }
        lock.lock();
        try {
            return capturingThreads.containsKey(Thread.currentThread());
        } finally {
            lock.unlock();
        }
    }

    /** Whether any global-mode capture holds the gate. */
    public boolean captureActive() {
        lock.lock();
        try {
            return captures > 0;
        } finally {
            lock.unlock();
        }
    }

    /** How many synchronizing sections are inside now (one counting itself in may be counted). */
    public int sectionsInside() {
        return sections.get();
    }
}
