package dev.gatun.cuda.internal.context;

import dev.gatun.cuda.OwnerKind;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A resource for tests of the one lifecycle's orderings (hold, close, unhold, use) that makes no
 * driver call and counts its frees. Made outside any stream, it is freed through retirement, as
 * any owner no stream used. Made in a stream's order ({@link #ProbeResource(ContextState,
 * StreamState)}, as a stream-ordered allocation), its close frees it at once and records what it
 * saw: the origin alone ({@link #FREED_ON_ORIGIN}, the free in that stream's order) or other
 * streams too ({@link #FENCED}, where a real kind would wait for their fences).
 */
public final class ProbeResource extends NativeResource {

    /** {@link #freedAs()}: freed at once in the order of its origin, the only stream the close saw. */
    public static final int FREED_ON_ORIGIN = 1;
    /** {@link #freedAs()}: the close saw other streams than the origin. */
    public static final int FENCED = 2;

    private final StreamState origin;
    private final AtomicInteger frees = new AtomicInteger();
    private volatile int freedAs;
    private volatile Runnable afterClosedIsSet = () -> { };

    /** A resource made outside any stream. */
    public ProbeResource(ContextState context) {
        this(context, null);
    }

    /** A resource made in {@code origin}'s order (null: outside any stream). */
    public ProbeResource(ContextState context, StreamState origin) {
        super(context, OwnerKind.EVENT, origin);
        this.origin = origin;
    }

    /** How often it was freed. */
    public int frees() {
        return frees.get();
    }

    /** For one made in a stream's order: {@link #FREED_ON_ORIGIN} or {@link #FENCED} once closed, 0 before. */
    public int freedAs() {
        return freedAs;
    }

    /** Runs {@code step} inside the close, once closed is set and before the holds are read. */
    public void afterClosedIsSet(Runnable step) {
        afterClosedIsSet = step;
    }

    @Override
    protected void beforeRetire() {
        afterClosedIsSet.run();
    }

    @Override
    protected boolean freeAtClose(StreamState soleStream, boolean countClose) {
        if (origin == null) {
            return false; // freed by its release, through retirement
        }
        freedAs = soleStream == origin ? FREED_ON_ORIGIN : FENCED; // no driver call: what counts is what it saw
        frees.incrementAndGet();
        return true;
    }

    @Override
    protected Retirement.Release howToFree() {
        return () -> {
            frees.incrementAndGet();
            return 0;
        };
    }

    @Override
    protected boolean synchronizingFree() {
        return false;
    }

    @Override
    public String identity() {
        return "probe#" + id();
    }
}
