package dev.gatun.cuda.graph;

import static org.junit.jupiter.api.Assertions.assertThrowsExactly;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.function.Executable;

/** How the validation latch refuses misuse: the JDK exception and the phrase its message says it with. */
enum LatchMisuse {
    /** The token's generation is over, or the recipient has joined a later one since. */
    STALE(IllegalArgumentException.class, "is stale"),
    /** A token or recipient of another latch, or a generation this latch never issued. */
    FOREIGN(IllegalArgumentException.class, "not from this validation latch"),
    /** Attach or activate by a recipient that did not begin the generation. */
    NOT_SUBMITTER(IllegalArgumentException.class, "is not its submitter"),
    /** Consume by a recipient that is not in the generation. */
    NOT_RECIPIENT(IllegalArgumentException.class, "is not a recipient of generation"),
    /** Begin while a generation is still open. */
    STILL_OPEN(IllegalStateException.class, "consume it at its request boundary first"),
    /** Attach to or activate a generation already active. */
    ALREADY_ACTIVE(IllegalStateException.class, "is already active"),
    /** Any call with an unregistered recipient. */
    UNREGISTERED(IllegalStateException.class, "is unregistered");

    final Class<? extends RuntimeException> type;
    private final String phrase;

    LatchMisuse(Class<? extends RuntimeException> type, String phrase) {
        this.type = type;
        this.phrase = phrase;
    }

    /** Asserts that {@code call} is refused as exactly this misuse. */
    RuntimeException assertRefuses(Executable call) {
        RuntimeException refused = assertThrowsExactly(type, call);
        assertTrue(refused.getMessage().contains(phrase), () -> name() + " expected: " + refused.getMessage());
        return refused;
    }
}
