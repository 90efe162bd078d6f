package dev.gatun.cuda.graph;

import static dev.gatun.cuda.graph.LatchWords.coordinator;
import static dev.gatun.cuda.graph.LatchWords.recipient;

import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A context's validation latch: one 4-byte device word that kernels OR error bits into when they
 * detect an out-of-range input (in eager or replayed execution), and a generation-numbered state
 * machine that hands each generation's bits to every recipient waiting for them, exactly once.
 *
 * <p>Per request: the submitting recipient {@link #begin}s a generation (IDLE → RESETTING: the word's
 * clear is enqueued on the stream → PREPARING), {@link #attach}es the other recipients that want the
 * result (PREPARING → ATTACHING → PREPARING), {@link #activate}s it (→ ACTIVE) and submits its
 * work. At the request boundary any recipient {@link #consume}s it: exactly one caller wins ACTIVE
 * → CONSUMING, reads and clears the word, publishes the flags to every recipient and returns the
 * latch to IDLE; every other recipient gets the same flags, also later (the result is sticky until
 * the recipient joins another generation).
 *
 * <p>All of this is compare-and-set on one coordinator word and one word per recipient, each packing
 * a phase with a generation: no lock, no allocation. Recipients register during setup; registration
 * only creates the recipient's words, so no registry lock exists for the warmed path to take.
 * Generations never repeat: their numbers never wrap (a latch that has used its last one refuses
 * to begin with a {@link ValidationLatchException}), so a stale token can never read a later
 * generation's result.
 *
 * <p>A token is a {@code long}, so that a request allocates nothing: this latch's 16-bit tag and
 * the generation. The recipient is given alongside it. Stale tokens, tokens or recipients of another
 * latch, and recipients not in the generation are misuse, rejected with an
 * {@link IllegalArgumentException} before anything changes; a call the latch's phase does not
 * allow is an {@link IllegalStateException}. (Tags repeat after 65,536 latches; a token from a latch that old is
 * caught as foreign only when its generation is not one this latch could accept.)
 *
 * <p>Graph resets never touch the word: a result is only ever cleared by consuming it.
 */
public final class ValidationLatch {

    private static final AtomicInteger NEXT_TAG = new AtomicInteger();
    /** {@link #settle} found that the recipient's word no longer refers to the generation asked for. */
    private static final long MOVED = -1;

    private final LatchDeviceWord word;
    private final long maxGeneration;
    private final int tag;
    /** {@link LatchWords#coordinator}: the current phase and generation. */
    private final AtomicLong coordinator = new AtomicLong(coordinator(ValidationPhase.IDLE, 0));
    /**
     * First recipient of the open generation, linked through {@link ValidationRecipient#next}. Written
     * only by the thread holding an exclusive phase (RESETTING, ATTACHING, CONSUMING) and published
     * by that thread's store of the coordinator word.
     */
    private ValidationRecipient head;
    /**
     * The open generation's submitter. Volatile because attach and activate read it before they
     * claim a phase; they then re-read the coordinator to prove it was this generation's.
     */
    private volatile ValidationRecipient submitter;
    private final AtomicLong generationsBegun = new AtomicLong();
    private final AtomicLong cleanups = new AtomicLong();
    private final AtomicLong registered = new AtomicLong();

    /**
     * A latch over {@code word}, with every generation the word's encoding allows.
     *
     * @param word the device word kernels raise bits in; the latch uses it but does not close it
     */
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

    /**
     * Registers a recipient, during setup. Names are for messages.
     *
     * @param name the recipient's name
     * @return the new recipient, IDLE until it begins or is attached to a generation
     * @throws IllegalArgumentException when {@code name} is blank
     */
    public ValidationRecipient register(String name) {
        ValidationRecipient recipient = new ValidationRecipient(this, Names.require(name, "recipient name"));
        registered.incrementAndGet();
        return recipient;
    }

    /**
     * Unregisters {@code recipient}. A generation it is still pending on is consumed first, through
     * the same protocol as {@link #consume}, so that the other recipients still get their result.
     *
     * @param recipient a recipient registered with this latch
     * @throws IllegalStateException when the recipient is already unregistered
     * @throws ValidationLatchException when consuming its pending generation failed to read the
     *     word; the recipient then stays registered and pending, and unregister may be retried
     */
    public void unregister(ValidationRecipient recipient) {
        requireOwn(recipient);
        while (true) {
            long current = recipient.word.get();
            switch (LatchWords.recipientState(current)) {
                // Consumes the generation, or waits for whoever is consuming it; then looks again.
                case PENDING -> settle(recipient, LatchWords.recipientGeneration(current));
                case IDLE, COMPLETE -> {
                    long retired = recipient(RecipientState.RETIRED, LatchWords.recipientGeneration(current));
                    if (recipient.word.compareAndSet(current, retired)) {
                        registered.decrementAndGet();
                        return;
                    }
                }
                case RETIRED -> throw unregistered(recipient);
            }
        }
    }

    /**
     * Opens a generation with {@code recipient} as submitter and first recipient: the device word's
     * clear is enqueued, ordered before any kernel submitted afterwards.
     *
     * @param recipient the submitter, a recipient registered with this latch
     * @return the generation's token, for {@link #attach}, {@link #activate} and {@link #consume}
     * @throws IllegalStateException when a generation is still open (consume it first) or the
     *     recipient is unregistered
     * @throws ValidationLatchException when the last generation has been used (create a new
     *     latch), or the clear could not be enqueued (nothing was opened)
     */
    public long begin(ValidationRecipient recipient) {
        requireOwn(recipient);
        while (true) {
            long current = coordinator.get();
            if (LatchWords.phase(current) != ValidationPhase.IDLE) {
                throw new IllegalStateException("recipient '" + recipient.name() + "' cannot begin a validation "
                        + "generation: generation " + LatchWords.generation(current) + " is still "
                        + LatchWords.phase(current) + "; consume it at its request boundary first");
            }
            long last = LatchWords.generation(current);
            if (last >= maxGeneration) {
                throw new ValidationLatchException("the validation latch has opened its last generation ("
                        + last + ") and numbers never wrap; create a new latch (CudaGraphs.create). Generation " + last
                        + " can still be consumed");
            }
            long generation = last + 1;
            if (coordinator.compareAndSet(current, coordinator(ValidationPhase.RESETTING, generation))) {
                return open(recipient, generation);
            }
        }
    }

    /** Runs in RESETTING, which this thread holds; every way out stores the coordinator again. */
    private long open(ValidationRecipient recipient, long generation) {
        long previous;
        try {
            previous = claim(recipient, generation);
        } catch (IllegalStateException e) {
            // The number is spent rather than reused: generations only ever grow.
            coordinator.set(coordinator(ValidationPhase.IDLE, generation));
            throw e;
        }
        try {
            word.clearAsync();
        } catch (RuntimeException e) {
            recipient.word.set(previous);
            coordinator.set(coordinator(ValidationPhase.IDLE, generation));
            throw new ValidationLatchException("clearing the validation word for generation " + generation
                    + " failed; no generation is open and recipient '" + recipient.name() + "' is as before. Begin "
                    + "again once the stream works", e);
        }
        recipient.next = null;
        head = recipient;
        submitter = recipient;
        generationsBegun.incrementAndGet();
        coordinator.set(coordinator(ValidationPhase.PREPARING, generation));
        return LatchWords.token(tag, generation);
    }

    /**
     * Adds {@code recipient} to the generation of {@code token}, which {@code submitter} began.
     * Attaching one that is already a recipient changes nothing.
     *
     * @param submitter the recipient that began the generation
     * @param token the generation's token, from {@link #begin}
     * @param recipient the recipient to add, registered with this latch
     * @throws IllegalArgumentException for a stale or foreign token, or a submitter that did not
     *     begin the generation
     * @throws IllegalStateException when the generation is already active, or the recipient is
     *     unregistered
     */
    public void attach(ValidationRecipient submitter, long token, ValidationRecipient recipient) {
        requireOwn(submitter);
        requireOwn(recipient);
        long generation = generationOf(token);
        claimFromPreparing(submitter, generation, ValidationPhase.ATTACHING, "attach a recipient to");
        try {
            if (claim(recipient, generation) != recipient(RecipientState.PENDING, generation)) {
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
     * @param submitter the recipient that began the generation
     * @param token the generation's token, from {@link #begin}
     * @throws IllegalArgumentException for a stale or foreign token, or a submitter that did not
     *     begin the generation
     * @throws IllegalStateException when the generation is already active
     */
    public void activate(ValidationRecipient submitter, long token) {
        requireOwn(submitter);
        claimFromPreparing(submitter, generationOf(token), ValidationPhase.ACTIVE, "activate");
    }

    /**
     * The flags of the generation of {@code token}, for {@code recipient}. The first caller
     * reads and clears the device word (waiting for the submitted work) and publishes the flags to
     * every recipient; every other caller, concurrent or later, gets the same flags without
     * touching the device. Consuming a generation that is still PREPARING ends it early (an
     * abandoned submission): the word is read all the same, and the submitter's later attach or
     * activate is rejected as stale.
     *
     * @param recipient a recipient of the generation
     * @param token the generation's token, from {@link #begin}
     * @return the bits kernels raised (see {@link LatchFlags}); 0 when none did
     * @throws IllegalArgumentException for a stale or foreign token, or a recipient not in the
     *     generation
     * @throws IllegalStateException when the recipient is unregistered
     * @throws ValidationLatchException when the word could not be read; nothing was published and
     *     the generation stays pending, so consuming again retries
     */
    public int consume(ValidationRecipient recipient, long token) {
        requireOwn(recipient);
        long generation = generationOf(token);
        long flags = settle(recipient, generation);
        if (flags == MOVED) {
            throw notRecipient(recipient, generation);
        }
        return (int) flags;
    }

    /** {@return the phase of the current generation} */
    public ValidationPhase phase() {
        return LatchWords.phase(coordinator.get());
    }

    /** {@return the open generation, or while IDLE the last one reserved (0 before the first)} */
    public long generation() {
        return LatchWords.generation(coordinator.get());
    }

    /** {@return a snapshot of the latch's counters: generations begun, cleanups, recipients registered} */
    public ValidationCounters counters() {
        return new ValidationCounters(generationsBegun.get(), cleanups.get(), registered.get());
    }

    /**
     * Waits until {@code recipient}'s result for {@code generation} is published, consuming the
     * generation itself if no one else is.
     *
     * @return the flags as an unsigned value, or {@link #MOVED} when the recipient's word refers to
     *     neither a pending nor a completed {@code generation}
     */
    private long settle(ValidationRecipient recipient, long generation) {
        long pending = recipient(RecipientState.PENDING, generation);
        long complete = recipient(RecipientState.COMPLETE, generation);
        long preparing = coordinator(ValidationPhase.PREPARING, generation);
        long active = coordinator(ValidationPhase.ACTIVE, generation);
        for (int attempt = 0;; attempt++) {
            long state = recipient.word.get();
            if (state == complete) {
                int flags = recipient.flags;
                // The recipient may have joined a later generation since the first read; the second
                // read refuses those flags rather than returning another generation's result.
                if (recipient.word.get() == complete) {
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
                // either the coordinator is claimable again or the recipient's word has moved on.
                Backoff.pause(attempt);
            } else if (recipient.word.get() == pending) {
                // Every writer updates recipient words before it stores the coordinator word, so a
                // recipient still pending once the coordinator has left its generation is corruption;
                // waiting for it would hang forever.
                throw new IllegalStateException("validation latch corrupted: recipient '" + recipient.name()
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
        long complete = recipient(RecipientState.COMPLETE, generation);
        ValidationRecipient recipient = head;
        while (recipient != null) {
            ValidationRecipient next = recipient.next;
            recipient.next = null;
            recipient.flags = flags;
            // A pending recipient's word changes only here: begin and attach claim IDLE or COMPLETE
            // recipients, and unregister consumes a pending generation before it retires the recipient.
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
    private void claimFromPreparing(ValidationRecipient submitter, long generation, ValidationPhase target,
            String action) {
        long preparing = coordinator(ValidationPhase.PREPARING, generation);
        long attaching = coordinator(ValidationPhase.ATTACHING, generation);
        for (int attempt = 0;; attempt++) {
            long current = coordinator.get();
            if (current == preparing) {
                if (this.submitter != submitter) {
                    // Only the wrong recipient if the generation did not move on while we looked.
                    if (coordinator.get() == current) {
                        throw new IllegalArgumentException("recipient '" + submitter.name() + "' cannot " + action
                                + " generation " + generation + ": it is not its submitter (another recipient began "
                                + "it), and only the submitter may");
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
     * Makes {@code recipient} a recipient of {@code generation}. The caller holds an exclusive phase.
     *
     * @return the recipient's previous word; PENDING for this generation if it already was a recipient
     */
    private long claim(ValidationRecipient recipient, long generation) {
        long pending = recipient(RecipientState.PENDING, generation);
        while (true) {
            long current = recipient.word.get();
            switch (LatchWords.recipientState(current)) {
                case PENDING -> {
                    return current;
                }
                case IDLE, COMPLETE -> {
                    if (recipient.word.compareAndSet(current, pending)) {
                        return current;
                    }
                }
                case RETIRED -> throw unregistered(recipient);
            }
        }
    }

    private long generationOf(long token) {
        if (LatchWords.tokenTag(token) != tag) {
            throw new IllegalArgumentException("validation token " + token + " is not from this validation latch "
                    + "(another latch issued it); use the token this latch's begin returned");
        }
        long generation = LatchWords.tokenGeneration(token);
        if (generation == 0) {
            throw neverIssued(generation);
        }
        return generation;
    }

    private void requireOwn(ValidationRecipient recipient) {
        Objects.requireNonNull(recipient, "recipient");
        if (recipient.latch != this) {
            throw new IllegalArgumentException("recipient '" + recipient.name() + "' is not from this validation "
                    + "latch (it was registered with another); register it with this one");
        }
    }

    private RuntimeException rejectGeneration(long current, long generation, String action) {
        long latest = LatchWords.generation(current);
        ValidationPhase phase = LatchWords.phase(current);
        if (generation > latest || generation == latest && phase == ValidationPhase.RESETTING) {
            return neverIssued(generation);
        }
        if (generation < latest || phase == ValidationPhase.IDLE || phase == ValidationPhase.CONSUMING) {
            return new IllegalArgumentException("cannot " + action + " generation " + generation + ": its token is "
                    + "stale, the generation is over (the latch is " + phase + " at generation " + latest + "); begin "
                    + "a new generation");
        }
        return new IllegalStateException("cannot " + action + " generation " + generation
                + ": it is already active; attach recipients before activating");
    }

    private RuntimeException notRecipient(ValidationRecipient recipient, long generation) {
        long state = recipient.word.get();
        if (LatchWords.recipientState(state) == RecipientState.RETIRED) {
            return unregistered(recipient);
        }
        if (generation > LatchWords.generation(coordinator.get())) {
            return neverIssued(generation);
        }
        long joined = LatchWords.recipientGeneration(state);
        if (joined > generation) {
            return new IllegalArgumentException("the token of generation " + generation + " is stale for recipient '"
                    + recipient.name() + "', which has joined generation " + joined + " since; the result of "
                    + "generation " + generation + " is no longer kept. Consume a generation before its recipients "
                    + "join the next");
        }
        return new IllegalArgumentException("recipient '" + recipient.name() + "' is not a recipient of generation "
                + generation + "; consume with the recipient that began it or one attached to it");
    }

    private static IllegalArgumentException neverIssued(long generation) {
        return new IllegalArgumentException("generation " + generation + " is not from this validation latch, which "
                + "never issued it; use the token its begin returned");
    }

    private static IllegalStateException unregistered(ValidationRecipient recipient) {
        return new IllegalStateException("validation recipient '" + recipient.name()
                + "' is unregistered; register a new recipient");
    }
}
