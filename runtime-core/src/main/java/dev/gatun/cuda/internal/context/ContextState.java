package dev.gatun.cuda.internal.context;

import dev.gatun.cuda.CaptureActiveException;
import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.internal.driver.Checked;
import dev.gatun.cuda.internal.driver.CuResults;
import dev.gatun.cuda.internal.driver.Driver;
import dev.gatun.cuda.internal.driver.DriverCalls;
import dev.gatun.cuda.internal.driver.DriverApi;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The internal state behind one {@code CudaContext} (its counterpart for a stream is
 * {@link StreamState}): the capture gate, the retirement queue, the
 * fence-event pool, the sync ordering, the counters and the live-owner counts. Owners reach the
 * driver only through its {@link #calls() layer 2}, which also holds the poison state.
 */
public final class ContextState implements RetirementQueue.Host {

    private final Driver driver;
    private final int device;
    private final MemorySegment handle;
    private final Checked checked;
    private final DriverCalls calls;
    private final boolean leakTracking;
    private final CaptureGate gate;
    private final CaptureCensus captures = new CaptureCensus();
    private final Section section;
    private final RetirementQueue retirement;
    private final EventPool events;
    private final WatchStreams watches = new WatchStreams(this);
    private final SyncOrdering ordering = new SyncOrdering(this);
    private final PeerAccess peers = new PeerAccess(this);
    private final ContextStats stats = new ContextStats(ordering);
    private final HostCallbackFailures hostCallbackFailures = new HostCallbackFailures();
    private final AtomicLongArray live = new AtomicLongArray(OwnerKind.values().length);
    /** With leak tracking, the resources counted in {@link #live} themselves, so a leak can be named; else null. */
    private final Set<NativeResource> tracked;
    /**
     * The context's synchronous stream, where synchronous operations and retirement's
     * stream-ordered frees run, and through which streams are ordered after others: Gatun's own,
     * never exposed, so never captured; set once, as the context opens.
     */
    private volatile StreamState syncStream;
    private volatile boolean closed;
    /**
     * The public context object this state belongs to (a {@code CudaContext}, typed loosely because
     * internal packages never depend on owners): for public owners whose only field is their
     * internal state (a device buffer's handle), to answer {@code context()}. Set once, as it opens.
     */
    private volatile Object api;
    /** Orders {@link #probeStickyError()} before {@link #markClosed()}: the synchronous stream outlives every probe. */
    private final Object probeLock = new Object();

    /**
     * @param handle the retained primary context ({@code CUcontext})
     * @param gateBound how long a synchronizing call waits for a global capture to end
     * @param leakTracking whether owners of this context record where they were allocated, for leak reports
     */
    public ContextState(Driver driver, int device, MemorySegment handle, Duration gateBound, boolean leakTracking) {
        this(driver, device, handle, MemorySegment.NULL, gateBound, leakTracking);
    }

    /**
     * @param handle the context ({@code CUcontext}): a retained primary context, or one made from {@code green}
     * @param green the green context ({@code CUgreenCtx}) {@code handle} was made from, or NULL; every
     *     stream of a green context is made for it ({@code cuGreenCtxStreamCreate})
     * @param gateBound how long a synchronizing call waits for a global capture to end
     * @param leakTracking whether owners of this context record where they were allocated, for leak reports
     */
    public ContextState(Driver driver, int device, MemorySegment handle, MemorySegment green, Duration gateBound,
            boolean leakTracking) {
        this.driver = driver;
        this.device = device;
        this.handle = handle;
        this.checked = new Checked(driver, device, handle, green);
        this.calls = new DriverCalls(checked);
        this.leakTracking = leakTracking;
        this.tracked = leakTracking ? ConcurrentHashMap.newKeySet() : null;
        this.gate = new CaptureGate(gateBound);
        this.section = new Section(gate);
        this.retirement = new RetirementQueue(this);
        this.events = new EventPool(this);
    }

    /** Names the public context object this state belongs to (once, as it opens). */
    public void attachApi(Object context) {
        if (api != null) {
            throw new IllegalStateException(this + " already belongs to " + api);
        }
        api = context;
    }

    /** The public context object this state belongs to (see {@link #attachApi}). */
    public Object api() {
        return api;
    }

    /** Layer 2: the driver's functions as typed, checked calls. */
    public DriverCalls calls() {
        return calls;
    }

    public Driver driver() {
        return driver;
    }

    public int device() {
        return device;
    }

    public MemorySegment handle() {
        return handle;
    }

    /** Whether owners of this context record their allocation site for leak reports. */
    public boolean leakTracking() {
        return leakTracking;
    }

    /** Whether a stream of this context can be capturing; see {@link CaptureCensus}. */
    public CaptureCensus captures() {
        return captures;
    }

    public CaptureGate gate() {
        return gate;
    }

    public RetirementQueue retirement() {
        return retirement;
    }

    public EventPool events() {
        return events;
    }

    /** The streams that turn an event's completion into a future. */
    public WatchStreams watches() {
        return watches;
    }

    /** The streams synchronous operations are ordered after. */
    public SyncOrdering ordering() {
        return ordering;
    }

    /** What host callbacks of this context threw. */
    public HostCallbackFailures hostCallbackFailures() {
        return hostCallbackFailures;
    }

    public ContextStats stats() {
        return stats;
    }

    /** The other devices whose memory this context can access. */
    public PeerAccess peers() {
        return peers;
    }

    /**
     * Creates the synchronous stream, once, as the context opens. It is not an owner (no
     * {@code Stream} wraps it, and live-owner counts leave it out), as the watch streams are not.
     */
    public void openSyncStream() {
        if (syncStream != null) {
            throw new IllegalStateException(this + " already has its synchronous stream");
        }
        syncStream = new StreamState(this, calls.streams().create(0));
    }

    /**
     * At context close, before the drain: the synchronous stream takes no more work (retirement
     * frees synchronously from now on) and is destroyed once its final fence has completed.
     */
    public void retireSyncStream() {
        StreamState s = syncStream;
        Evidence last = s.close();
        MemorySegment handle = s.handle();
        retirement.submit(new Retirement("the synchronous stream of " + this, OwnerKind.STREAM, List.of(last), () -> {
            // Its final fence completed: nothing queued on it remains, and nothing queues on it
            // any more (it is closed, and only Gatun ever had its handle).
            s.markDrained();
            return calls.streams().destroy(handle);
        }, true));
    }

    /**
     * The context's synchronous stream (see {@link #syncStream}'s field). Closed once the
     * context is: a retirement that would queue a stream-ordered free on it then frees
     * synchronously instead.
     */
    public StreamState syncStream() {
        return syncStream;
    }

    /** Whether Gatun's state for this context has been shut down ({@code CudaContext.close()}). */
    public boolean isClosed() {
        return closed;
    }

    /** Marks the context closed: every later operation on it is refused by {@link #checkOpen()}. */
    public void markClosed() {
        synchronized (probeLock) {
            closed = true; // no probe starts from now on, and none is under way
        }
    }

    /**
     * Asks the driver whether a sticky error hit this context, by polling its synchronous stream (a
     * sticky error is reported by every call and poisons the context through layer 2). For the
     * completion dispatcher, whose futures would otherwise wait forever: the driver runs no host
     * function after a sticky error. Does nothing once the context is closed, so the stream
     * it polls is still alive.
     */
    void probeStickyError() {
        synchronized (probeLock) {
            if (!closed && syncStream != null) {
                calls.streams().poll(syncStream.handle());
            }
        }
    }

    /** Throws {@link IllegalStateException} when the context is closed. */
    public void checkOpen() {
        if (closed) {
            throw new IllegalStateException("the Gatun context of device " + device + " is closed; "
                    + "Device.context() opens a new one");
        }
    }

    /** The sticky error that poisoned this context, or null. */
    public CudaException poison() {
        return checked.poison();
    }

    @Override
    public boolean poisoned() {
        return checked.poisoned();
    }

    /**
     * A synchronizing section of the gate, for the device-synchronizing calls made inside it;
     * leave it with {@link Section#close()} (try-with-resources). Entering allocates nothing.
     */
    public static final class Section implements AutoCloseable {
        private final CaptureGate gate;

        private Section(CaptureGate gate) {
            this.gate = gate;
        }

        @Override
        public void close() {
            gate.exitSynchronizing();
        }
    }

    /**
     * Enters a synchronizing section of the gate, for calls that may synchronize the device.
     *
     * @throws CaptureActiveException when a global capture stays active past the gate's bound
     */
    public Section enterSection(String operation) {
        try {
            gate.enterSynchronizing();
        } catch (CaptureGate.GateException e) {
            throw new CaptureActiveException(operation + " on device " + device + " would invalidate a global-mode "
                    + "stream capture: " + e.getMessage() + ". Do it before capturing, capture in thread-local or "
                    + "relaxed mode, or raise the context's gate timeout.");
        }
        return section;
    }

    /** Counts a new live owner. */
    public void opened(OwnerKind kind) {
        live.incrementAndGet(kind.ordinal());
    }

    /** Counts an owner closed (its handle handed to retirement). */
    public void closed(OwnerKind kind) {
        live.decrementAndGet(kind.ordinal());
    }

    public long live(OwnerKind kind) {
        long n = live.get(kind.ordinal());
        // Stream-ordered buffers count their life on their streams' ledgers (no atomic update on
        // the allocate + close path); a close elsewhere took them off the count above.
        return kind == OwnerKind.DEVICE_BUFFER ? n + stats.ledgerOwners() : n;
    }

    /** Lists a fully constructed resource as live (leak tracking only; see {@link NativeResource}). */
    void track(NativeResource resource) {
        tracked.add(resource);
    }

    /** Drops a closed resource from the list (leak tracking only). */
    void untrack(NativeResource resource) {
        tracked.remove(resource);
    }

    /**
     * The live resources, oldest first: those made (and fully constructed) and not yet closed.
     *
     * @throws IllegalStateException without leak tracking, which alone keeps the list
     */
    public List<NativeResource> liveResources() {
        if (tracked == null) {
            throw new IllegalStateException("the context of device " + device + " does not track leaks, so it cannot list "
                    + "its live owners (only count them); open it with ContextOptions.withLeakTracking(true), or "
                    + "run with -Dgatun.leakTracking=true");
        }
        return tracked.stream().sorted(Comparator.comparingLong(NativeResource::id)).toList();
    }

    @Override
    public boolean callsAllowedHere() {
        return checked.callsAllowedHere();
    }

    @Override
    public void retired(Object identity, boolean freed) {
        (freed ? stats.retirementsCompleted : stats.retirementsFailed).increment();
    }

    @Override
    public void abandoned(Retirement r) {
        stats.retirementsAbandoned.increment();
    }

    @Override
    public String resultName(int result) {
        return CuResults.name(result) + " (" + result + ")";
    }

    /** Frees what the retirement queue can free now without blocking (a safe point). */
    public void reap() {
        retirement.reap();
    }

    /**
     * Shutdown: synchronizes the device (inside the gate), after which every queued
     * retirement's evidence is complete, frees them all, then destroys the pooled events and
     * the watch streams.
     */
    public void drain(String operation) {
        checked.live(operation);
        try (var _ = enterSection(operation)) {
            stats.forcedSynchronizations.increment();
            calls.context().synchronize();
            retirement.drainAfterSynchronize();
            events.destroyPooled();
            watches.destroy();
        }
    }

    @Override
    public String toString() {
        return "context of device " + device;
    }
}
