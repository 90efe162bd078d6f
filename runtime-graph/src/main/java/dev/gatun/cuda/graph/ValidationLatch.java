package dev.gatun.cuda.graph;

import static dev.gatun.cuda.graph.LatchWords.coordinator;
import static dev.gatun.cuda.graph.LatchWords.owner;

import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A context's validation latch: one 4-byte device word that kernels OR error bits into when they
 * detect an out-of-range input (in eager or replayed execution), and a generation-numbered state
 * machine that hands each generation's bits to every owner waiting for them, exactly once.
 *
 * <p>Per request: the submitting owner {@link #begin}s a generation (IDLE → RESETTING: the word's
 * clear is enqueued on the stream → PREPARING), {@link #attach}es the other owners that want the
 * result (PREPARING → ATTACHING → PREPARING), {@link #activate}s it (→ ACTIVE) and submits its
 * work. At the request boundary any recipient {@link #consume}s it: exactly one caller wins ACTIVE
 * → CONSUMING, reads and clears the word, publishes the flags to every recipient and returns the
 * latch to IDLE; every other recipient gets the same flags, also later (the result is sticky until
 * the owner joins another generation).
 *
 * <p>All of this is compare-and-set on one coordinator word and one word per owner, each packing
 * a phase with a generation: no lock, no allocation. Owners register during setup; registration
 * only creates the owner's words, so no registry lock exists for the warmed path to take.
 * Generations never repeat: their numbers never wrap ({@link ValidationGenerationExhaustedException}),
 * so a stale token can never read a later generation's result.
 *
 * <p>A token is a {@code long}, so that a request allocates nothing: this latch's 16-bit tag and
 * the generation. The owner is given alongside it. Stale tokens, tokens or owners of another
 * latch, and owners that are not recipients are rejected with a {@link ValidationTokenException}
 * before anything changes. (Tags repeat after 65,536 latches; a token from a latch that old is
 * caught as foreign only when its generation is not one this latch could accept.)
 *
 * <p>Graph resets never touch the word: a result is only ever cleared by consuming it.
 */
public final class ValidationLatch {

    private static final AtomicInteger NEXT_TAG = new AtomicInteger();
    /** {@link #settle} found that the owner's word no longer refers to the generation asked for. */
    private static final long MOVED = -1;

    private final LatchDeviceWord word;
    private final long maxGeneration;
    private final int tag;
    /** {@link LatchWords#coordinator}: the current phase and generation. */
    private final AtomicLong coordinator = new AtomicLong(coordinator(ValidationPhase.IDLE, 0));
    /**
     * First recipient of the open generation, linked through {@link ValidationOwner#next}. Written
     * only by the thread holding an exclusive phase (RESETTING, ATTACHING, CONSUMING) and published
     * by that thread's store of the coordinator word.
     */
    private ValidationOwner head;
    /**
     * The open generation's submitter. Volatile because attach and activate read it before they
     * claim a phase; they then re-read the coordinator to prove it was this generation's.
     */
    private volatile ValidationOwner submitter;
    private final AtomicLong generationsBegun = new AtomicLong();
    private final AtomicLong cleanups = new AtomicLong();
    private final AtomicLong registered = new AtomicLong();

    public ValidationLatch(LatchDeviceWord word) {
        this(word, LatchWords.MAX_GENERATION);
    }

    /** With a lower last generation, so that tests can reach exhaustion. */
    ValidationLatch(LatchDeviceWord word, long maxGeneration) {
        this.word = Objects.requireNonNull(word, "word");
        if (maxGeneration < 1 || maxGeneration > LatchWords.MAX_GENERATION) {
            throw new IllegalArgumentException("maxGeneration must be in [1, " + LatchWords.MAX_GENERATION + "]: "
                    + maxGeneration);
        }
        this.maxGeneration = maxGeneration;
        this.tag = NEXT_TAG.getAndIncrement() & LatchWords.TAG_MASK;
    }

    /** Registers an owner, during setup. Names are for messages. */
    public ValidationOwner register(String name) {
        ValidationOwner owner = new ValidationOwner(this, Names.require(name, "owner name"));
        registered.incrementAndGet();
        return owner;
    }

    /**
     * Unregisters {@code owner}. A generation it is still pending on is consumed first, through
     * the same protocol as {@link #consume}, so that the other recipients still get their result.
     *
     * @throws ValidationStateException when the owner is already unregistered
     * @throws ValidationLatchException when consuming its pending generation failed to read the
     *     word; the owner then stays registered and pending, and unregister may be retried
     */
    public void unregister(ValidationOwner owner) {
        requireOwn(owner);
        while (true) {
            long current = owner.word.get();
            switch (LatchWords.ownerState(current)) {
                // Consumes the generation, or waits for whoever is consuming it; then looks again.
                case PENDING -> settle(owner, LatchWords.ownerGeneration(current));
                case IDLE, COMPLETE -> {
                    long retired = owner(OwnerState.RETIRED, LatchWords.ownerGeneration(current));
                    if (owner.word.compareAndSet(current, retired)) {
                        registered.decrementAndGet();
                        return;
                    }
                }
                case RETIRED -> throw unregistered(owner);
            }
        }
    }

    /**
     * Opens a generation with {@code owner} as submitter and first recipient: the device word's
     * clear is enqueued, ordered before any kernel submitted afterwards.
     *
     * @return the generation's token, for {@link #attach}, {@link #activate} and {@link #consume}
     * @throws ValidationStateException when a generation is still open (consume it first) or the
     *     owner is unregistered
     * @throws ValidationGenerationExhaustedException when the last generation has been used
     * @throws ValidationLatchException when the clear could not be enqueued; nothing was opened
     */
    public long begin(ValidationOwner owner) {
        requireOwn(owner);
        while (true) {
            long current = coordinator.get();
            if (LatchWords.phase(current) != ValidationPhase.IDLE) {
                throw new ValidationStateException("owner '" + owner.name() + "' cannot begin a validation generation: "
                        + "generation " + LatchWords.generation(current) + " is still " + LatchWords.phase(current)
                        + "; consume it at its request boundary first");
            }
            long last = LatchWords.generation(current);
            if (last >= maxGeneration) {
                throw new ValidationGenerationExhaustedException("the validation latch has opened its last generation ("
                        + last + ") and numbers never wrap; create a new latch (a new context). Generation " + last
                        + " can still be consumed");
            }
            long generation = last + 1;
            if (coordinator.compareAndSet(current, coordinator(ValidationPhase.RESETTING, generation))) {
                return open(owner, generation);
            }
        }
    }

    /** Runs in RESETTING, which this thread holds; every way out stores the coordinator again. */
    private long open(ValidationOwner owner, long generation) {
        long previous;
        try {
            previous = claim(owner, generation);
        } catch (ValidationStateException e) {
            // The number is spent rather than reused: generations only ever grow.
            coordinator.set(coordinator(ValidationPhase.IDLE, generation));
            throw e;
        }
        try {
            word.clearAsync();
        } catch (RuntimeException e) {
            owner.word.set(previous);
            coordinator.set(coordinator(ValidationPhase.IDLE, generation));
            throw new ValidationLatchException("clearing the validation word for generation " + generation
                    + " failed; no generation is open and owner '" + owner.name() + "' is as before. Begin again "
                    + "once the stream works", e);
        }
        owner.next = null;
        head = owner;
        submitter = owner;
        generationsBegun.incrementAndGet();
        coordinator.set(coordinator(ValidationPhase.PREPARING, generation));
        return LatchWords.token(tag, generation);
    }

    /**
     * Adds {@code recipient} to the generation of {@code token}, which {@code submitter} began.
     * Attaching an owner that is already a recipient changes nothing.
     *
     * @throws ValidationTokenException for a stale or foreign token, or a submitter that did not
     *     begin the generation
     * @throws ValidationStateException when the generation is already active, or the recipient is
     *     unregistered
     */
    public void attach(ValidationOwner submitter, long token, ValidationOwner recipient) {
        requireOwn(submitter);
        requireOwn(recipient);
        long generation = generationOf(token);
        claimFromPreparing(submitter, generation, ValidationPhase.ATTACHING, "attach a recipient to");
        try {
            if (claim(recipient, generation) != owner(OwnerState.PENDING, generation)) {
                recipient.next = head;
                head = recipient;
            }
        } finally {
            coordinator.set(coordinator(ValidationPhase.PREPARING, generation));
        }
    }

    /**
     * Seals the generation of {@code token}: its recipients are final and it can be consumed.
     *
     * @throws ValidationTokenException for a stale or foreign token, or a submitter that did not
     *     begin the generation
     * @throws ValidationStateException when the generation is already active
     */
    public void activate(ValidationOwner submitter, long token) {
        requireOwn(submitter);
        claimFromPreparing(submitter, generationOf(token), ValidationPhase.ACTIVE, "activate");
    }

    /**
     * The flags of the generation of {@code token}, for recipient {@code owner}. The first caller
     * reads and clears the device word (waiting for the submitted work) and publishes the flags to
     * every recipient; every other caller, concurrent or later, gets the same flags without
     * touching the device. Consuming a generation that is still PREPARING ends it early (an
     * abandoned submission): the word is read all the same, and the submitter's later attach or
     * activate is rejected as stale.
     *
     * @return the bits kernels raised (see {@link LatchFlags}); 0 when none did
     * @throws ValidationTokenException for a stale or foreign token, or an owner that is not a
     *     recipient of the generation
     * @throws ValidationStateException when the owner is unregistered
     * @throws ValidationLatchException when the word could not be read; nothing was published and
     *     the generation stays pending, so consuming again retries
     */
    public int consume(ValidationOwner owner, long token) {
        requireOwn(owner);
        long generation = generationOf(token);
        long flags = settle(owner, generation);
        if (flags == MOVED) {
            throw notRecipient(owner, generation);
        }
        return (int) flags;
    }

    /** The phase of the current generation. */
    public ValidationPhase phase() {
        return LatchWords.phase(coordinator.get());
    }

    /** The open generation, or while IDLE the last one reserved (0 before the first). */
    public long generation() {
        return LatchWords.generation(coordinator.get());
    }

    public ValidationCounts counts() {
        return new ValidationCounts(generationsBegun.get(), cleanups.get(), registered.get());
    }

    /**
     * Waits until {@code owner}'s result for {@code generation} is published, consuming the
     * generation itself if no one else is.
     *
     * @return the flags as an unsigned value, or {@link #MOVED} when the owner's word refers to
     *     neither a pending nor a completed {@code generation}
     */
    private long settle(ValidationOwner owner, long generation) {
        long pending = owner(OwnerState.PENDING, generation);
        long complete = owner(OwnerState.COMPLETE, generation);
        long preparing = coordinator(ValidationPhase.PREPARING, generation);
        long active = coordinator(ValidationPhase.ACTIVE, generation);
        for (int attempt = 0;; attempt++) {
            long state = owner.word.get();
            if (state == complete) {
                int flags = owner.flags;
                // The owner may have joined a later generation since the first read; the second
                // read refuses those flags rather than returning another generation's result.
                if (owner.word.get() == complete) {
                    return Integer.toUnsignedLong(flags);
                }
                continue;
            }
            if (state != pending) {
                return MOVED;
            }
            long current = coordinator.get();
            if (current == preparing || current == active) {
                // The linearization point: the one caller whose CAS wins does the device work.
                if (coordinator.compareAndSet(current, coordinator(ValidationPhase.CONSUMING, generation))) {
                    return cleanUp(generation, current);
                }
            } else if (LatchWords.generation(current) == generation
                    && LatchWords.phase(current) != ValidationPhase.IDLE) {
                // RESETTING, ATTACHING or CONSUMING: another thread's short step, after which
                // either the coordinator is claimable again or the owner's word has moved on.
                Backoff.pause(attempt);
            } else if (owner.word.get() == pending) {
                // Every writer updates owner words before it stores the coordinator word, so an
                // owner still pending once the coordinator has left its generation is corruption;
                // waiting for it would hang forever.
                throw new IllegalStateException("validation latch corrupted: owner '" + owner.name()
                        + "' is pending on generation " + generation + " while the latch is "
                        + LatchWords.phase(current) + " at generation " + LatchWords.generation(current));
            }
        }
    }

    /** Runs in CONSUMING, which this thread holds; {@code claimed} is the word it replaced. */
    private long cleanUp(long generation, long claimed) {
        int flags;
        try {
            flags = word.readAndClear();
        } catch (RuntimeException e) {
            coordinator.set(claimed);
            throw new ValidationLatchException("reading the validation word for generation " + generation
                    + " failed; no result was published and the generation is still pending: consume it again to "
                    + "retry", e);
        }
        long complete = owner(OwnerState.COMPLETE, generation);
        ValidationOwner recipient = head;
        while (recipient != null) {
            ValidationOwner next = recipient.next;
            recipient.next = null;
            recipient.flags = flags;
            // A pending owner's word changes only here: begin and attach claim IDLE or COMPLETE
            // owners, and unregister consumes a pending generation before it retires the owner.
            recipient.word.set(complete);
            recipient = next;
        }
        head = null;
        submitter = null;
        cleanups.incrementAndGet();
        coordinator.set(coordinator(ValidationPhase.IDLE, generation));
        return Integer.toUnsignedLong(flags);
    }

    /**
     * Moves the coordinator from PREPARING to {@code target} for {@code submitter}'s generation,
     * waiting out a concurrent attach.
     */
    private void claimFromPreparing(ValidationOwner submitter, long generation, ValidationPhase target,
            String action) {
        long preparing = coordinator(ValidationPhase.PREPARING, generation);
        long attaching = coordinator(ValidationPhase.ATTACHING, generation);
        for (int attempt = 0;; attempt++) {
            long current = coordinator.get();
            if (current == preparing) {
                if (this.submitter != submitter) {
                    // Only the wrong owner if the generation did not move on while we looked.
                    if (coordinator.get() == current) {
                        throw new ValidationTokenException(ValidationTokenException.Reason.WRONG_OWNER, "owner '"
                                + submitter.name() + "' cannot " + action + " generation " + generation
                                + ": it was begun by another owner; only its submitter may");
                    }
                } else if (coordinator.compareAndSet(preparing, coordinator(target, generation))) {
                    return;
                }
            } else if (current == attaching) {
                Backoff.pause(attempt);
            } else {
                throw rejectGeneration(current, generation, action);
            }
        }
    }

    /**
     * Makes {@code owner} a recipient of {@code generation}. The caller holds an exclusive phase.
     *
     * @return the owner's previous word; PENDING for this generation if it already was a recipient
     */
    private long claim(ValidationOwner owner, long generation) {
        long pending = owner(OwnerState.PENDING, generation);
        while (true) {
            long current = owner.word.get();
            switch (LatchWords.ownerState(current)) {
                case PENDING -> {
                    return current;
                }
                case IDLE, COMPLETE -> {
                    if (owner.word.compareAndSet(current, pending)) {
                        return current;
                    }
                }
                case RETIRED -> throw unregistered(owner);
            }
        }
    }

    private long generationOf(long token) {
        if (LatchWords.tokenTag(token) != tag) {
            throw new ValidationTokenException(ValidationTokenException.Reason.FOREIGN, "validation token " + token
                    + " belongs to another validation latch; use the token this latch's begin returned");
        }
        long generation = LatchWords.tokenGeneration(token);
        if (generation == 0) {
            throw neverIssued(generation);
        }
        return generation;
    }

    private void requireOwn(ValidationOwner owner) {
        Objects.requireNonNull(owner, "owner");
        if (owner.latch != this) {
            throw new ValidationTokenException(ValidationTokenException.Reason.FOREIGN, "owner '" + owner.name()
                    + "' is registered with another validation latch; register it with this one");
        }
    }

    private RuntimeException rejectGeneration(long current, long generation, String action) {
        long latest = LatchWords.generation(current);
        ValidationPhase phase = LatchWords.phase(current);
        if (generation > latest || generation == latest && phase == ValidationPhase.RESETTING) {
            return neverIssued(generation);
        }
        if (generation < latest || phase == ValidationPhase.IDLE || phase == ValidationPhase.CONSUMING) {
            return new ValidationTokenException(ValidationTokenException.Reason.STALE, "cannot " + action
                    + " generation " + generation + ": it is over (the latch is " + phase + " at generation " + latest
                    + "); begin a new generation");
        }
        return new ValidationStateException("cannot " + action + " generation " + generation
                + ": it is already active; attach recipients before activating");
    }

    private RuntimeException notRecipient(ValidationOwner owner, long generation) {
        long state = owner.word.get();
        if (LatchWords.ownerState(state) == OwnerState.RETIRED) {
            return unregistered(owner);
        }
        if (generation > LatchWords.generation(coordinator.get())) {
            return neverIssued(generation);
        }
        long joined = LatchWords.ownerGeneration(state);
        if (joined > generation) {
            return new ValidationTokenException(ValidationTokenException.Reason.STALE, "owner '" + owner.name()
                    + "' has joined generation " + joined + " since; the result of generation " + generation
                    + " is no longer kept. Consume a generation before its owners join the next");
        }
        return new ValidationTokenException(ValidationTokenException.Reason.WRONG_OWNER, "owner '" + owner.name()
                + "' is not a recipient of generation " + generation + "; consume with the owner that began it or "
                + "one attached to it");
    }

    private static ValidationTokenException neverIssued(long generation) {
        return new ValidationTokenException(ValidationTokenException.Reason.FOREIGN, "generation " + generation
                + " was never issued by this validation latch; use the token its begin returned");
    }

    private static ValidationStateException unregistered(ValidationOwner owner) {
        return new ValidationStateException("validation owner '" + owner.name()
                + "' is unregistered; register a new owner");
    }
}
