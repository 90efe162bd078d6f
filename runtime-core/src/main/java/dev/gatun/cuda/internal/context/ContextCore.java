package dev.gatun.cuda.internal.context;

import dev.gatun.cuda.CaptureActiveException;
import dev.gatun.cuda.ContextPoisonedException;
import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.internal.driver.Checked;
import dev.gatun.cuda.internal.driver.CuResults;
import dev.gatun.cuda.internal.driver.Driver;
import dev.gatun.cuda.internal.driver.DriverCalls;
import dev.gatun.cuda.internal.driver.DriverApi;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.IntSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The machinery behind one {@code CudaContext}: the checked layer (CUresult to typed exception,
 * sticky-error poisoning), making the context current, the capture gate, the retirement
 * queue, the fence-event pool and the counters. Owners call the driver only through this.
 */
public final class ContextCore implements RetirementQueue.Host {

    private static final Logger LOG = LoggerFactory.getLogger(ContextCore.class);

    private final Driver driver;
    private final DriverApi api;
    private final int device;
    private final MemorySegment handle;
    private final long handleAddress;
    private final CaptureGate gate;
    private final RetirementQueue retirement;
    private final EventPool events;
    private final SyncOrdering ordering = new SyncOrdering(this);
    private final ContextStats stats = new ContextStats();
    private final AtomicLongArray live = new AtomicLongArray(OwnerKind.values().length);
    private final ThreadLocal<MemorySegment> scratch;
    private final Checked checked;
    private final DriverCalls calls;

    /**
     * @param handle the retained primary context ({@code CUcontext})
     * @param gateBound how long a synchronizing call waits for a global capture to end
     */
    public ContextCore(Driver driver, int device, MemorySegment handle, Duration gateBound) {
        this.driver = driver;
        this.api = driver.api();
        this.device = device;
        this.handle = handle;
        this.handleAddress = handle.address();
        this.checked = new Checked(driver, device, handle);
        this.calls = new DriverCalls(checked);
        this.gate = new CaptureGate(gateBound);
        this.retirement = new RetirementQueue(this);
        this.events = new EventPool(this);
        // One 64-byte native scratch per thread for out-parameters of hot calls; Arena.ofAuto
        // frees it when the thread (or virtual thread) is gone.
        this.scratch = ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(64, 8));
    }

    public DriverApi api() {
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

    public CaptureGate gate() {
        return gate;
    }

    public RetirementQueue retirement() {
        return retirement;
    }

    public EventPool events() {
        return events;
    }

    /** The streams synchronous operations are ordered after. */
    public SyncOrdering ordering() {
        return ordering;
    }

    public ContextStats stats() {
        return stats;
    }

    /** This thread's native scratch (64 bytes, 8-aligned), for out-parameters. Not reentrant. */
    public MemorySegment scratch() {
        return scratch.get();
    }

    /**
     * Before any operation: fails fast if a sticky error poisoned the context, then makes the
     * context current on this thread (one cuCtxGetCurrent when it already is).
     *
     * @param operation a constant name (no string building on hot paths)
     */
    public void enter(String operation) {
        CudaException first = checked.poison();
        if (first != null) {
            throw new ContextPoisonedException(operation, first);
        }
        MemorySegment out = scratch.get();
        // Safety: out is this thread's scratch, 8 bytes for one CUcontext, alive for the thread.
        check(api.cuCtxGetCurrent(out), "cuCtxGetCurrent");
        if (out.get(ValueLayout.JAVA_LONG, 0) != handleAddress) {
            // Safety: handle is the primary context this process retained and never releases.
            check(api.cuCtxSetCurrent(handle), "cuCtxSetCurrent");
        }
    }

    /** Throws the typed exception for a failed CUresult; poisons the context on a sticky error. */
    public void check(int result, String operation) {
        if (result != 0) {
            throw fail(result, operation);
        }
    }

    /** The typed exception for a failed result (poisoning the context if it is sticky), to throw. */
    public CudaException fail(int result, String operation) {
        return checked.fail(result, operation);
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
     * Runs a device-synchronizing driver call inside a synchronizing section of the gate.
     *
     * @throws CaptureActiveException when a global capture stays active past the gate's bound
     */
    public void synchronizing(String operation, IntSupplier call) {
        enterSection(operation);
        try {
            check(call.getAsInt(), operation);
        } finally {
            gate.exitSynchronizing();
        }
    }

    /** Enters a synchronizing section or throws {@link CaptureActiveException}. Pair with gate().exitSynchronizing(). */
    public void enterSection(String operation) {
        try {
            gate.enterSynchronizing();
        } catch (CaptureGate.GateException e) {
            throw new CaptureActiveException(operation + " on device " + device + " would invalidate a global-mode "
                    + "stream capture: " + e.getMessage() + ". Do it before capturing, capture in thread-local or "
                    + "relaxed mode, or raise the context's gate timeout.");
        }
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
        return live.get(kind.ordinal());
    }

    @Override
    public boolean makeCurrentForRetirement() {
        return checked.tryCurrent();
    }

    @Override
    public void retired(Retirement r, boolean freed) {
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
     * retirement's evidence is complete, frees them all, then destroys the pooled events.
     */
    public void drain(String operation) {
        enter(operation);
        enterSection(operation);
        try {
            stats.forcedSynchronizations.increment();
            check(api.cuCtxSynchronize(), "cuCtxSynchronize");
            retirement.drainAfterSynchronize();
            events.destroyPooled();
        } finally {
            gate.exitSynchronizing();
        }
    }

    @Override
    public String toString() {
        return "context of device " + device;
    }
}
