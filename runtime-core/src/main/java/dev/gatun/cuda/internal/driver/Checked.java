package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.ContextPoisonedException;
import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.events.ContextPoisonedEvent;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The choke point of layer 2 for one context: every typed call ({@link DriverCalls}) reaches
 * the driver through the {@link DriverApi} held here, and turns its result into a typed
 * exception here (with the lines the driver logged about the call, see {@link DriverLog}),
 * poisoning the context on a sticky error. Owners never see the raw API: it is
 * visible to this package only.
 *
 * <p>Out-parameters live in one {@value #OUT_BYTES}-byte native block per thread, for every
 * context, that only this package touches: a typed call writes it and reads it back before it
 * returns, and no call runs another, so the block is never shared by two calls in flight on one
 * thread. (A stream-ordered allocation writes into its stream's own {@link OutBlock} instead,
 * under the stream's lock: no thread-local lookup on that hot path.) Inputs the driver
 * reads from native memory (a module image, a function name) are copied into a confined arena
 * per call, on cold paths only.
 *
 * <p>A {@code Checked} {@linkplain #withoutContext without a context} serves driver-level calls
 * (device queries, retaining a primary context): it cannot make a context current, and a sticky
 * result poisons nothing, since there is no context to poison.
 */
public final class Checked {

    private static final Logger LOG = LoggerFactory.getLogger(Checked.class);
    /** Room for the largest out-parameter: a device name, which the driver is told to cut at this length. */
    static final int OUT_BYTES = 256;
    private static final int NOT_PERMITTED = CudaDriver.CUDA_ERROR_NOT_PERMITTED();
    private static final String MAKE_CURRENT = "cuCtxGetCurrent/cuCtxSetCurrent";

    final DriverApi api;
    private final Driver driver;
    private final int device;
    private final MemorySegment context;
    private final long contextAddress;
    private final boolean hasContext;
    /** The green context ({@code CUgreenCtx}) that {@link #context} was made from, or NULL for a primary context. */
    private final MemorySegment green;
    /** Static: one block per thread for every context, since no call runs another (see the class comment). */
    private static final ThreadLocal<OutBlock> OUT = ThreadLocal.withInitial(() -> new OutBlock(OUT_BYTES));
    private volatile CudaException poison;
    /** The file pattern of GPU coredumps when Gatun turned them on for this context ({@link CoredumpCalls}), else null. */
    private volatile String coredumpPattern;
    /** The dump the sticky error left, found as it poisoned the context; {@link CoredumpFile#NONE} when dumps were off. */
    private volatile CoredumpFile poisonDump = CoredumpFile.NONE;

    /**
     * @param device the device ordinal, for messages
     * @param context the retained primary context whose calls these are ({@code CUcontext})
     */
    public Checked(Driver driver, int device, MemorySegment context) {
        this(driver, device, context, MemorySegment.NULL, true);
    }

    /**
     * @param device the device ordinal, for messages
     * @param context the context whose calls these are ({@code CUcontext}, from {@code cuCtxFromGreenCtx})
     * @param green the green context it was made from ({@code CUgreenCtx}), whose streams are made with
     *     {@code cuGreenCtxStreamCreate}
     */
    public Checked(Driver driver, int device, MemorySegment context, MemorySegment green) {
        this(driver, device, context, green, true);
    }

    private Checked(Driver driver, int device, MemorySegment context, MemorySegment green, boolean hasContext) {
        this.driver = driver;
        this.api = driver.api();
        this.device = device;
        this.context = context;
        this.contextAddress = context.address();
        this.hasContext = hasContext;
        this.green = green;
    }

    /**
     * Driver-level calls that belong to no context (device queries).
     *
     * @param device the device ordinal errors name, or -1 for calls about no one device
     */
    public static Checked withoutContext(Driver driver, int device) {
        return new Checked(driver, device, MemorySegment.NULL, MemorySegment.NULL, false);
    }

    public Driver driver() {
        return driver;
    }

    public int device() {
        return device;
    }

    public MemorySegment context() {
        return context;
    }

    /** {@return the green context ({@code CUgreenCtx}) this context was made from, or NULL for a primary context} */
    public MemorySegment green() {
        return green;
    }

    /** This thread's out-parameter block ({@value #OUT_BYTES} bytes, 8-aligned), for the call being made. */
    MemorySegment out() {
        return OUT.get().view; // a static final thread-local's value stays reachable until its thread ends
    }

    /**
     * Fails fast when a sticky error poisoned the context. Owners call it first when an
     * operation makes several calls or changes state before its first call, so that a poisoned
     * context refuses it before anything happens.
     *
     * @param operation a constant name (no string building on hot paths)
     */
    public void live(String operation) {
        HostFunction.refuseInsideCallback(operation, device);
        if (poison != null) {
            throw poisonedFailure(operation);
        }
    }

    /**
     * The exception for {@code operation} refused on this poisoned context: the first error as
     * its cause, and the GPU coredump it left when dumps were on.
     */
    public ContextPoisonedException poisonedFailure(String operation) {
        CoredumpFile dump = poisonDump;
        String pattern = coredumpPattern;
        if (!dump.written() && pattern != null) {
            // Not on disk when the context was poisoned: the driver may have finished it since.
            CoredumpFile again = CoredumpFile.find(pattern);
            if (again.written()) {
                poisonDump = again;
                dump = again;
            }
        }
        return new ContextPoisonedException(operation, poison, dump.file(), dump.note());
    }

    /** GPU coredumps are on for this context, written where {@code pattern} says (as the driver reported it). */
    void coredumpsOn(String pattern) {
        coredumpPattern = pattern;
    }

    /**
     * For calls that act on the calling thread's current context: fails fast when poisoned, then
     * makes this context current (one cuCtxGetCurrent when it already is). Calls that name a
     * stream or event act in that handle's context and skip this.
     *
     * <p>The current context belongs to the OS thread, which for a virtual thread is its carrier
     * of the moment. Call this immediately before the downcall it serves, with nothing between
     * the two that can park (a lock, a wait, a blocking queue, logging, an arena that registers
     * a cleaner): a virtual thread moves to another carrier only when it parks, and a downcall
     * pins it to its carrier for the call's duration, so the context made current here is the
     * one the call sees, on a platform thread and on a virtual one alike.
     */
    void current(String operation) {
        if (!hasContext) {
            throw new IllegalStateException(operation + " needs a context; these calls belong to none");
        }
        live(operation);
        int r = makeCurrent();
        if (r != 0) {
            throw fail(r, MAKE_CURRENT + " (for " + operation + ")");
        }
    }

    /**
     * {@link #current} for the calls whose raw result is handed back (frees and destroys, for
     * retirement and rollback): makes this context current, immediately before the call, without
     * throwing. Returns 0, or the result to hand back instead of making the call:
     * {@code CUDA_ERROR_NOT_PERMITTED} inside a host callback, or the driver's answer when it
     * would not make the context current (observed: a sticky one poisons). A poisoned context is
     * made current all the same: the call then reports the driver's own answer.
     */
    int currentForRaw() {
        if (!hasContext) {
            throw new IllegalStateException("a free needs a context; these calls belong to none");
        }
        int refused = refusedInsideCallback();
        return refused != 0 ? refused : observe(makeCurrent(), MAKE_CURRENT);
    }

    /** Makes this context current on the calling thread's carrier: 0, or the result of the call that failed. */
    private int makeCurrent() {
        MemorySegment o = out();
        // Safety: o is this thread's out block, 8 bytes for one CUcontext.
        int r = api.cuCtxGetCurrent(o);
        if (r != 0 || o.get(ValueLayout.JAVA_LONG, 0) == contextAddress) {
            return r;
        }
        // Safety: context is the primary context this process retained and never releases, or a
        // green context's, which outlives every owner made in it.
        return api.cuCtxSetCurrent(context);
    }

    /**
     * Whether the calling thread may call the driver at all: false while it runs a host callback,
     * where every call is refused (retirement then leaves its frees to a later reap).
     */
    public boolean callsAllowedHere() {
        return !HostFunction.insideCallback();
    }

    /**
     * For the calls whose raw result is handed back (retirement, completion evidence): the
     * result to report instead of making the call, {@code CUDA_ERROR_NOT_PERMITTED}, when the
     * calling thread runs a host callback (see {@link HostFunction#refuseInsideCallback}); else 0.
     */
    int refusedInsideCallback() {
        return HostFunction.insideCallback() ? NOT_PERMITTED : 0;
    }

    /** Throws the typed exception for a failed result; poisons the context on a sticky error. */
    void check(int result, String operation) {
        if (result != 0) {
            throw fail(result, operation);
        }
    }

    /**
     * For results that are handed back raw (frees for retirement, completion polls): poisons the
     * context when the result is sticky, and returns it unchanged.
     */
    int observe(int result, String operation) {
        if (result != 0 && CuResults.isSticky(result)) {
            fail(result, operation);
        }
        return result;
    }

    /** The typed exception for a failed result (poisoning the context if it is sticky), to throw. */
    public CudaException fail(int result, String operation) {
        CudaException error = driver.error(result, operation, device);
        if (hasContext && CuResults.isSticky(result)) {
            synchronized (this) {
                if (poison == null) {
                    String pattern = coredumpPattern;
                    // Looked for before poison is published, so every ContextPoisonedException names it.
                    CoredumpFile dump = pattern == null ? CoredumpFile.NONE : CoredumpFile.find(pattern);
                    poisonDump = dump;
                    poison = error;
                    LOG.error("Device {} context poisoned by a sticky error; every later call on it will fail: {}{}",
                            device, error.getMessage(), dump.note().isEmpty() ? "" : "; " + dump.note());
                    ContextPoisonedEvent event = ContextPoisonedEvent.start();
                    if (event != null) {
                        event.device = device;
                        event.operation = operation;
                        event.result = error.resultName();
                        event.coredumpFile = dump.file().map(Object::toString)
                                .orElse(pattern == null ? null : "none found for " + pattern);
                        event.commit();
                    }
                }
            }
        }
        return error;
    }

    /** The sticky error that poisoned this context, or null. */
    public CudaException poison() {
        return poison;
    }

    public boolean poisoned() {
        return poison != null;
    }

    /** See {@link Driver#require}. */
    public void require(DriverFeature feature) {
        driver.require(feature);
    }
}
