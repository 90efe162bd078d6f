package dev.gatun.cuda.internal.context;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
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
 * at once, never both. Sections are reentrant per thread. A section asked for by a thread that
 * itself holds a capture fails at once (it would invalidate its own capture, and could never be
 * let in). Waits are bounded; past the bound the caller gets {@link GateException}.
 * Retirement uses {@link #tryEnterSynchronizing()}, which never waits.
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
    private final Condition changed = lock.newCondition();
    private final ThreadLocal<int[]> sectionDepth = ThreadLocal.withInitial(() -> new int[1]);
    private final Map<Thread, Integer> capturingThreads = new HashMap<>();
    private int sections;
    private int captures;
    /** {@code captures}, readable without the lock: the common case (no capture) then takes no lock. */
    private volatile int capturesVisible;
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
        int[] depth = sectionDepth.get();
        lock.lock();
        try {
            if (depth[0] > 0) {
                // Reentrant: this thread is already inside, so no capture can be active.
                sections++;
                depth[0]++;
                return;
            }
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
            sections++;
            depth[0]++;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new GateException("interrupted while waiting for a global-mode capture to end", false);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Whether the calling thread is inside a synchronizing section now: then no global-mode
     * capture can begin until it leaves ({@link #enterCapture} waits for every section), so a
     * synchronizing call made within needs no section of its own. Reads this thread's depth
     * only, without the lock.
     */
    public boolean insideSection() {
        return sectionDepth.get()[0] > 0;
    }

    /** Enters a section only if no capture is active; never waits. */
    public boolean tryEnterSynchronizing() {
        int[] depth = sectionDepth.get();
        lock.lock();
        try {
            if (captures > 0 && depth[0] == 0) {
                return false;
            }
            sections++;
            depth[0]++;
            return true;
        } finally {
            lock.unlock();
        }
    }

    public void exitSynchronizing() {
        int[] depth = sectionDepth.get();
        lock.lock();
        try {
            if (depth[0] == 0) {
                throw new IllegalStateException("exitSynchronizing without a matching enter on this thread");
            }
            depth[0]--;
            if (--sections == 0) {
                changed.signalAll();
            }
        } finally {
            lock.unlock();
        }
    }

    /** Enters the capture side, waiting up to the bound for synchronizing sections to leave. */
    public CaptureTicket enterCapture() throws GateException {
        if (sectionDepth.get()[0] > 0) {
            throw new GateException("this thread is inside a synchronizing call; it cannot begin a global capture", true);
        }
        lock.lock();
        try {
            long remaining = bound.toNanos();
            while (sections > 0) {
                if (remaining <= 0) {
                    throw new GateException(sections + " synchronizing call(s) still running after waiting "
                            + bound.toMillis() + " ms", false);
                }
                remaining = changed.awaitNanos(remaining);
            }
            capturesVisible = ++captures;
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
            capturesVisible = --captures;
            if (captures == 0) {
                changed.signalAll();
            }
        } finally {
            lock.unlock();
        }
    }

    /** Whether the calling thread began a global-mode capture that has not ended. */
    public boolean capturingOnCurrentThread() {
        SwitchPoint.CAPTURE_FAST_READ.reach();
        if (capturesVisible == 0) {
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

    /** How many synchronizing sections are inside now. */
    public int sectionsInside() {
        lock.lock();
        try {
            return sections;
        } finally {
            lock.unlock();
        }
    }
}
