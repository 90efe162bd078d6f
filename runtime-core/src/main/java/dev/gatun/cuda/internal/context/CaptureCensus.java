package dev.gatun.cuda.internal.context;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * Whether any stream of a context can be capturing, so that {@link StreamState#capturing()}
 * asks the driver ({@code cuStreamIsCapturing}, otherwise one call on every stream-ordered free
 * and every fence) only when the answer can be yes.
 *
 * <p>A stream captures only if a capture was begun on it, or it joined one by waiting on an
 * event recorded during a capture. Gatun begins captures only through
 * {@link dev.gatun.cuda.Stream#beginCapture}, which counts them here while they last. Captures
 * Gatun cannot see need a way in, and each marks the context for good: a stream handle exported
 * ({@link dev.gatun.cuda.Stream#handle}), on which code outside Gatun may begin one, or a wait on
 * another context's event, which may join a capture there. With no capture counted and neither
 * mark, no stream of the context can be capturing.
 */
public final class CaptureCensus {

    private final AtomicInteger inProgress = new AtomicInteger();
    private volatile boolean untracked;

    /** Whether a stream of the context may be capturing now: the driver must be asked. */
    public boolean anyPossible() {
        SwitchPoint.CAPTURE_FAST_READ.reach();
        return untracked || inProgress.get() != 0;
    }

    /** Called before a Gatun capture is begun on the driver (counted even if the begin then fails: see {@link #ended}). */
    public void beginning() {
        inProgress.incrementAndGet();
    }

    /** Called once the capture counted by {@link #beginning} is over: the driver no longer reports it. */
    public void ended() {
        inProgress.decrementAndGet();
    }

    /** A stream handle left Gatun, or a stream waited on another context's event: captures may begin unseen. */
    public void untracked() {
        if (!untracked) {
            untracked = true;
        }
    }
}
