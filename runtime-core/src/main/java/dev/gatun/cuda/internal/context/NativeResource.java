package dev.gatun.cuda.internal.context;

import dev.gatun.cuda.OwnerKind;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.Cleaner;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The native resource behind a public owner, and its one lifecycle. The owner object (a
 * {@code DeviceBuffer}, a {@code Stream}, ...) holds one of these, which holds the native
 * handle; the resource never refers back to its owner, so the owner can become unreachable.
 *
 * <ul>
 *   <li>{@link #close()} is idempotent: the first call counts the owner closed and hands the
 *       handle to the context's retirement queue, with one fence per stream it was used on.
 *   <li>If the owner becomes unreachable without being closed, the {@link Cleaner} reports it
 *       (SLF4J warn, with the allocation site when its context tracks leaks) and
 *       retires it the same way: a safety net, not a way to manage memory.
 *   <li>Use after close is an {@link IllegalStateException} from {@link #checkOpen}.
 * </ul>
 */
public abstract class NativeResource implements Runnable {

    private static final Logger LOG = LoggerFactory.getLogger(NativeResource.class);
    private static final Cleaner CLEANER = Cleaner.create(r -> {
        Thread t = new Thread(r, "gatun-cleaner");
        t.setDaemon(true);
        return t;
    });
    private static final AtomicLong IDS = new AtomicLong();
    private static final VarHandle CLOSED;
    private static final VarHandle HOLDS;

    static {
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            CLOSED = lookup.findVarHandle(NativeResource.class, "closed", boolean.class);
            HOLDS = lookup.findVarHandle(NativeResource.class, "holds", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e); // the fields above exist: cannot happen
        }
    }

    protected final ContextState context;
    private final OwnerKind kind;
    private final long id = IDS.incrementAndGet();
    private final StreamUsage usage;
    /** Set at creation (and at each reuse of a recycled resource, which leak tracking turns off). */
    private Throwable allocationSite;
    // Fields updated through VarHandles rather than AtomicBoolean/AtomicInteger objects: two
    // fewer allocations for every owner, and allocate + close is a hot path for buffers.
    private volatile boolean closed;
    /** Holds by captured graphs; while any remain, a close is recorded but retirement waits. */
    private volatile int holds;
    private volatile boolean retirementDeferred;
    /**
     * Set by {@link #closeUnlessHeld()} as it decides, under this monitor, whether to close, and
     * withdrawn only when it decides not to: a hold that sees it waits for that decision (the
     * monitor) instead of going by the flags.
     */
    private volatile boolean closing;

    protected NativeResource(ContextState context, OwnerKind kind) {
        this(context, kind, null);
    }

    /**
     * A resource created in {@code origin}'s stream order (a stream-ordered allocation), counted
     * as used there from the start: its later uses on that stream record nothing.
     */
    protected NativeResource(ContextState context, OwnerKind kind, StreamState origin) {
        this.context = context;
        this.kind = kind;
        this.usage = new StreamUsage(origin);
        this.allocationSite = context.leakTracking() ? new Throwable("allocation site of a leaked Gatun owner") : null;
        countOpened(origin);
    }

    /**
     * Makes a closed resource, whose handle was freed and which nothing holds, stand for a new
     * handle of its kind made in {@code origin}'s stream order (null: none): open, unused, counted
     * live again. For device memory recycled by its kind (see {@code internal.memory.Recycler});
     * never with leak tracking, whose listing names resource objects. The caller publishes the
     * resource afterwards through a release store (its owner's claim).
     *
     * <p>The holds are not checked: {@link #hold()} counts before it reads closed, so a late use
     * of the closed handle (a capture admitting it) may be counting now. That count either reads
     * closed, waits for the monitor and withdraws (refused), or reads this reopening and stands
     * on the new handle, as a hold taken just after this would (the use is then refused by its
     * owner check). Its close and every unhold count the holds as usual, so nothing is lost.
     */
    protected final void reopen(StreamState origin) {
        if (!closed || retirementDeferred || allocationSite != null) {
            throw new IllegalStateException(identity() + " cannot be reused: it is open, its retirement waits or it is tracked");
        }
        usage.reset(origin);
        if (closing) {
            closing = false; // closed by closeUnlessHeld in its last life (a load otherwise)
        }
        // A release store, not a volatile one (no fence): no other thread reads this resource
        // until the owner's claim publishes it, and that claim orders this write before it.
        CLOSED.setRelease(this, false);
        countOpened(origin);
    }

    /**
     * Whether this kind counts its owners live on the ledger of the stream it was made in
     * ({@link StreamLedger}, under that stream's lock, which the allocation holds) instead of in
     * the context's atomic counts: the stream-ordered allocations, whose allocate + close then
     * makes no atomic update for it. Its free at close on that stream counts the close there (see
     * {@link #freeAtClose}); any other close is counted in the context, and a snapshot adds both.
     * Called from the constructor: answer with a constant.
     */
    protected boolean countsLifeOnStream() {
        return false;
    }

    private void countOpened(StreamState origin) {
        if (countsLifeOnStream()) {
            origin.ledger().ownerOpened();
        } else {
            context.opened(kind);
        }
    }

    /** Where this owner was created, when its context tracks leaks ({@code ContextOptions.leakTracking}); else null. */
    public final Throwable allocationSite() {
        return allocationSite;
    }

    /**
     * Registers the public owner object with the Cleaner; call once, from the owner's constructor.
     * The resource is fully constructed by then, so it is also listed among its context's live
     * owners here (with leak tracking).
     */
    public final Cleaner.Cleanable watch(Object owner) {
        listAsLive();
        return CLEANER.register(owner, this);
    }

    /**
     * As {@link #watch(Object)}, with {@code action} (which must not refer to the owner) instead of
     * this resource's own: for an owner whose resource is recycled, whose action checks that the
     * resource still stands for that owner before it {@linkplain #reportLeak() reports} and closes it.
     */
    protected final Cleaner.Cleanable watch(Object owner, Runnable action) {
        listAsLive();
        return CLEANER.register(owner, action);
    }

    /**
     * For a resource whose owner another owner closes (a growable buffer's views): lists it as
     * live, as {@link #watch} does, without registering a Cleaner.
     */
    public final void listWithoutCleaner() {
        listAsLive();
    }

    /**
     * With leak tracking, lists this resource among its context's live owners. Called once the
     * subclass's constructor has set its fields, never from this class's constructor: a listing
     * read by another thread calls {@link #identity()}, which reads those fields.
     */
    final void listAsLive() {
        if (allocationSite != null) {
            context.track(this);
        }
    }

    public final ContextState context() {
        return context;
    }

    public final OwnerKind kind() {
        return kind;
    }

    public final long id() {
        return id;
    }

    public final boolean isClosed() {
        return closed;
    }

    /** Throws {@link IllegalStateException} when closed. */
    public final void checkOpen() {
        if (closed) {
            throw new IllegalStateException(identity() + " is closed");
        }
    }

    /**
     * Records that work using this handle is being queued on {@code stream}; call under the
     * stream's lock, with the driver call that queues the work. While the stream captures for
     * Gatun (a capture begun on it or joined), the capture's scope holds the owner (or refuses
     * it) first, so a capture never bakes in a handle it does not hold. (The synchronous stream,
     * which never captures, needs no lock.)
     *
     * <p>Refuses a resource closed and on its way to retirement. A use and a close are a Dekker
     * pair: the use lists its stream first and then reads whether the resource is closed; the
     * close marks it closed first and then reads the streams listed (its free at close, or its
     * fences). Of a use and a close that race, at least one sees the other: either the close sees
     * the stream and fences it (under the stream's lock, which this use holds, so after the
     * work), or the use sees the close and is refused, leaving its stream listed (harmless; see
     * {@link StreamUsage}). So a use that passed its owner's open check just before a close on
     * another thread (a launch whose buffer another thread closes, a shrink revoking a growable
     * buffer's view) is refused instead of queued after the memory was freed. A closed resource a
     * graph still holds stays usable.
     *
     * @throws IllegalStateException when the resource is closed and not held
     */
    public final void usedOn(StreamState stream) {
        list(stream);
        if (closedForGood()) {
            throw new IllegalStateException(closedIdentity() + " is closed");
        }
    }

    /**
     * The first half of a use ({@link #usedOn}): the capture scope's admission, then the stream
     * listed. The caller then reads whether the use may go on, and refuses it if not.
     */
    protected final void list(StreamState stream) {
        CaptureScope scope = stream.captureScope();
        if (scope != null) {
            scope.admit(this);
        }
        usage.add(stream, context);
    }

    /** Whether the resource is closed and no deferred retirement keeps it usable (a graph's hold). */
    protected final boolean closedForGood() {
        SwitchPoint.CLOSED_READ.reach();
        return closed && !retirementDeferred;
    }

    /** Names the resource in the refusal of a use after its close; {@link #identity()} unless a kind says better. */
    public String closedIdentity() {
        return identity();
    }

    /**
     * Keeps the handle from being freed, even after close, until {@link #unhold()}: a captured
     * graph that baked it in holds it until the graph's last launch has completed.
     *
     * @throws IllegalStateException when the owner is closed and nothing holds it any more
     *     (closed while held, it can still be held again: an executable made from a graph
     *     takes its own holds on what the graph holds)
     */
    public final void hold() {
        // Counted before the flags are read, the mirror of close(), which sets closed before it
        // reads holds, and of closeUnlessHeld(), which sets closing before it reads holds: of a
        // hold and a close that race, at least one sees the other's write. Neither flag set: any
        // close that begins from here sees this count, so the hold stands without the monitor
        // (one atomic add on the pool allocation's path, no monitor enter and exit).
        SwitchPoint.HOLD_COUNT.reach();
        HOLDS.getAndAdd(this, 1);
        if (!closedOrClosing()) {
            return;
        }
        boolean refused;
        synchronized (this) {
            // After a close's deferral and closeUnlessHeld's decision, as before this fast path.
            refused = closedForGood();
        }
        if (refused) {
            unhold(); // outside this monitor: the close may have deferred to this count meanwhile
            throw new IllegalStateException(identity() + " is closed");
        }
    }

    /** The read of a hold's fast path: whether a close has begun (set closed) or closeUnlessHeld is deciding. */
    private boolean closedOrClosing() {
        SwitchPoint.CLOSED_READ.reach();
        if (closed) {
            return true;
        }
        SwitchPoint.CLOSED_READ.reach();
        return closing;
    }

    /** Whether anything holds the handle now (a captured graph, an executable, a view). */
    public final boolean held() {
        return holds > 0;
    }

    /** Drops a hold; the last one lets a deferred close proceed to retirement. */
    public final void unhold() {
        SwitchPoint.UNHOLD_COUNT.reach();
        int n = (int) HOLDS.getAndAdd(this, -1) - 1;
        if (n < 0) {
            throw new IllegalStateException(identity() + " unheld more often than held");
        }
        if (n == 0 && deferred()) {
            boolean due;
            synchronized (this) {
                due = retirementDeferred && holds == 0;
                if (due) {
                    retirementDeferred = false;
                }
            }
            if (due) {
                retire(false); // outside this monitor, which a submission's admission takes under a stream's lock
            }
        }
    }

    /** Whether a close deferred the retirement to the last unhold (read outside the monitor by {@link #unhold()}). */
    private boolean deferred() {
        SwitchPoint.DEFERRAL_READ.reach();
        return retirementDeferred;
    }

    /** Whether anything holds the handle, read by a close (outside the monitor when nothing does). */
    private boolean heldAtClose() {
        SwitchPoint.HOLDS_READ.reach();
        return holds > 0;
    }

    /** Sets or withdraws the close's deferral of retirement to the last unhold (under this monitor). */
    private void deferRetirement(boolean defer) {
        SwitchPoint.DEFERRAL_WRITE.reach();
        retirementDeferred = defer;
    }

    /** Marks the resource closed, once; whether this call did. */
    private boolean markClosed() {
        SwitchPoint.CLOSED_WRITE.reach();
        return CLOSED.compareAndSet(this, false, true);
    }

    /**
     * Adds to {@code into} (made on first need, else returned as given, maybe null) the streams
     * this handle was used on other than {@code except}; allocates nothing when there are none.
     */
    public final List<StreamState> streamsUsedBesides(StreamState except, List<StreamState> into) {
        return usage.addOthers(except, into);
    }

    /**
     * Makes {@code waiter} wait for the work queued so far on other contexts' streams that used
     * this handle (peer copies and launches); its own context's streams are the context's
     * {@link SyncOrdering}'s to cover.
     */
    public final void orderAfterForeignUses(StreamState waiter) {
        for (StreamState s : usage.foreignStreams(context)) {
            SyncOrdering.orderAfter(waiter, s);
        }
    }

    /** How to free the handle once every fence completed. */
    protected abstract Retirement.Release howToFree();

    /** Whether the free synchronizes the device (and so must stay out of global captures). */
    protected abstract boolean synchronizingFree();

    /** Evidence beyond the stream fences (a pinned transfer's own fence, say); none by default. */
    protected List<Evidence> extraEvidence() {
        return List.of();
    }

    /** Called once, just before the handle is handed to retirement (e.g. to invalidate host views). */
    protected void beforeRetire() {
    }

    /**
     * A chance to free the handle at close without waiting for fences: when the driver itself
     * orders the free after the last use (a stream-ordered free on the only stream that used it),
     * or when no stream used it and the free needs no driver call. Returns true when the handle is
     * gone. Default: no.
     *
     * @param soleStream the only stream the handle was used on, or null if none or several
     *     ({@link #usedOnAnyStream()} tells which)
     * @param countClose true when the close is counted here ({@link #countsLifeOnStream()}, and
     *     called from the close itself, not from a deferred retirement, whose close was counted
     *     already): a free made here then counts the close on the stream's ledger, under the lock
     *     the free holds
     */
    protected boolean freeAtClose(StreamState soleStream, boolean countClose) {
        return false;
    }

    /** Whether work was queued on any stream using the handle. */
    protected final boolean usedOnAnyStream() {
        return usage.any();
    }

    /**
     * Whether the handle was made by another library and only borrowed: its retirement fences
     * Gatun's work on it like any other but releases nothing native. No by default.
     */
    public boolean borrowed() {
        return false;
    }

    /** Type and number, e.g. {@code DeviceBuffer#12 (4096 bytes, device 0)}. */
    public abstract String identity();

    @Override
    public String toString() {
        return identity();
    }

    /** Closes once; later calls do nothing. Returns whether this call closed it. */
    public final boolean close() {
        if (!markClosed()) {
            return false;
        }
        // The owner counts as live until its handle is in retirement's hands (or deferred to a
        // graph's hold): a context close that sees no live owners must find every handle queued.
        boolean countedOnStream = false;
        try {
            beforeRetire();
            // No monitor when nothing holds the handle (the allocate + close hot path): closed was
            // set above before holds is read here, and hold() counts before it reads closed, so a
            // hold this read misses sees the close and withdraws.
            if (heldAtClose()) {
                synchronized (this) {
                    // Deferred before holds is read again, as unhold() counts down before it reads
                    // the deferral (outside this monitor): of the two, at least one sees the
                    // other's write, so a last unhold that this read misses finds the deferral
                    // and retires the handle. Deferring after the read would let that unhold
                    // pass unseen between the two, and nothing would ever retire the handle.
                    deferRetirement(true);
                    if (heldAtClose()) {
                        return true; // a captured graph still needs the handle
                    }
                    deferRetirement(false); // an unhold that saw it waits for this monitor, then finds it withdrawn
                }
            }
            countedOnStream = retire(true);
            return true;
        } finally {
            countClosed(countedOnStream);
        }
    }

    /**
     * Closes, as {@link #close()}, unless a captured graph holds the handle; atomic with respect to
     * {@link #hold()}, so no capture can take a hold once this returns true. Returns false, and
     * changes nothing, while held; true when closed (by this call or before).
     */
    public final boolean closeUnlessHeld() {
        synchronized (this) {
            // Announced before holds is read: a hold counted after this read sees closing (or
            // closed) and waits for this monitor, then sees the outcome.
            SwitchPoint.CLOSED_WRITE.reach();
            closing = true;
            if (heldAtClose()) {
                closing = false; // not closing after all: nothing changed
                return false;
            }
            if (!markClosed()) {
                return true; // closed before
            }
            // Closed under the monitor a hold that saw closing waits for: it sees closed and
            // refuses. Closing stays set: a hold reads closed, then closing, and withdrawing
            // closing here would let one read closed before it was set and closing after.
        }
        boolean countedOnStream = false;
        try {
            beforeRetire();
            countedOnStream = retire(true);
            return true;
        } finally {
            countClosed(countedOnStream);
        }
    }

    /** No longer live for its context: counted closed, and off the leak-tracking list. */
    private void countClosed(boolean countedOnStream) {
        if (!countedOnStream) {
            context.closed(kind);
        }
        if (allocationSite != null) {
            context.untrack(this);
        }
    }

    /**
     * Frees the handle at close, or hands it to retirement. Returns whether a free at close
     * counted the close on its stream's ledger (only when {@code closing}: the close itself, not
     * a deferred retirement).
     */
    private boolean retire(boolean closing) {
        // Runs on whatever thread closes (or the Cleaner's, or a graph's retirement), with any
        // context current or none: a stream-ordered free and a fence record name their stream,
        // a pooled event is created with the context made current, and each free makes it
        // current itself, just before its call. Never under a stream's lock or this monitor: the
        // free and the fences take the locks of the streams that used the handle.
        boolean countClose = closing && countsLifeOnStream();
        if (freeAtClose(usage.sole(), countClose)) {
            return countClose;
        }
        List<Evidence> fences = usage.fences();
        List<Evidence> extra = extraEvidence();
        if (!extra.isEmpty()) {
            fences = new ArrayList<>(fences);
            fences.addAll(extra);
        }
        Retirement.Release release = howToFree();
        boolean synchronizing = synchronizingFree();
        // No stream used the handle and nothing else must complete first: no queued work can use
        // it, so it may go now (the resource itself names it: its identity string is built only
        // if a line is logged).
        if (fences.isEmpty()) {
            context.retirement().freeNowOrSubmit(this, kind, release, synchronizing);
        } else {
            context.retirement().submit(new Retirement(this, kind, fences, release, synchronizing));
        }
        return false;
    }

    /** The Cleaner's action: runs when the owner became unreachable, or when close() cleaned it. */
    @Override
    public final void run() {
        if (closed) {
            return;
        }
        reportLeak();
        close();
    }

    /** Logs that the owner was never closed (with its allocation site when tracked); the caller then closes it. */
    protected final void reportLeak() {
        if (allocationSite != null) {
            LOG.warn("{} was never closed; retiring it now. Close owners explicitly (try-with-resources).", identity(),
                    allocationSite);
        } else {
            LOG.warn("{} was never closed; retiring it now. Close owners explicitly (try-with-resources); "
                    + "open its context with ContextOptions.withLeakTracking(true) to see where it was allocated.",
                    identity());
        }
    }
}
