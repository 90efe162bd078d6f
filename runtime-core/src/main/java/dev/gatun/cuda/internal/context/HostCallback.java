package dev.gatun.cuda.internal.context;

import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.internal.driver.HostFunction;
import java.util.Objects;

/**
 * A Java callback the driver runs on its own thread: the body of a graph's host node, or of a
 * host function queued on a stream (a host node when the stream captures). It is registered with
 * {@link HostFunction} for as long as anything can run it, which is what its lifecycle as a
 * resource says: a graph holds it ({@link Holds}), an executable made from that graph holds it,
 * a capture holds what its work uses, and a stream that queued it fences it; its creator closes
 * it at once, so it is retired (its token forgotten, no driver call) once the last of those lets go.
 *
 * <p>What the callback throws cannot reach the code that queued it (the driver's thread runs it,
 * long after): it is logged, counted and kept for {@code ContextDiagnostics.takeHostCallbackFailures()}
 * ({@link HostCallbackFailures}); the nodes after it run as usual.
 */
public final class HostCallback extends NativeResource implements HostFunction.Callback {

    private final Runnable body;
    private final long token;

    /** A callback of {@code context} running {@code body}, registered now; close it once it is held or queued. */
    public HostCallback(ContextState context, Runnable body) {
        Objects.requireNonNull(body, "callback"); // before it counts as live
        super(context, OwnerKind.HOST_CALLBACK);
        this.body = body;
        this.token = HostFunction.register(this);
    }

    /** {@return the token the host function receives as {@code userData}} */
    public long token() {
        return token;
    }

    /** Runs the user's code on the driver's thread; what it throws is reported, never propagated. */
    @Override
    public void fire() {
        try {
            body.run();
        } catch (Throwable e) {
            context.hostCallbackFailures().record(identity(), e);
        }
    }

    @Override
    protected Retirement.Release howToFree() {
        return Retirement.Release.withoutDriver(() -> HostFunction.unregister(token));
    }

    @Override
    protected boolean synchronizingFree() {
        return false;
    }

    @Override
    public String identity() {
        return "HostCallback#" + id() + " (device " + context.device() + ")";
    }
}
