package dev.gatun.cuda.graph;

import java.util.concurrent.atomic.AtomicLong;

/**
 * A party registered with a {@link ValidationLatch} (a session, an executor) to receive the flags
 * of the generations it begins or is attached to. Registered during setup; everything per request
 * goes through its words, which are allocated here once.
 */
public final class ValidationRecipient {

    final ValidationLatch latch;
    private final String name;
    /** {@link LatchWords#recipient}: this recipient's state and the generation it refers to. */
    final AtomicLong word = new AtomicLong(LatchWords.recipient(RecipientState.IDLE, 0));
    /**
     * The consumed flags of the generation in {@link #word}, written before the word turns
     * COMPLETE. Volatile because a sticky reader checks the word again after reading the flags:
     * that check only proves the flags belong to its generation if the reads stay in order.
     */
    volatile int flags;
    /**
     * The next recipient of the open generation. Written only by the thread holding the
     * coordinator's exclusive phase (RESETTING, ATTACHING or CONSUMING) and published by its
     * store of the coordinator word.
     */
    ValidationRecipient next;

    ValidationRecipient(ValidationLatch latch, String name) {
        this.latch = latch;
        this.name = name;
    }

    /** {@return the recipient's name, as registered with the latch} */
    public String name() {
        return name;
    }

    @Override
    public String toString() {
        long current = word.get();
        return "ValidationRecipient[" + name + ", " + LatchWords.recipientState(current) + " generation "
                + LatchWords.recipientGeneration(current) + "]";
    }
}
