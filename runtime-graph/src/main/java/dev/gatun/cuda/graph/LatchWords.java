package dev.gatun.cuda.graph;

/**
 * Encodings of the latch's three kinds of word. Each packs a phase with a generation so that one
 * compare-and-set checks both: a generation never repeats, so a word can never return to a value
 * an earlier CAS expected (no ABA).
 *
 * <ul>
 *   <li>coordinator word: generation in bits 3..49, {@link ValidationPhase} in bits 0..2;
 *   <li>recipient word: generation in bits 2..48, {@link RecipientState} in bits 0..1;
 *   <li>token: latch tag in bits 47..62, generation in bits 0..46; never negative, never 0.
 * </ul>
 */
final class LatchWords {

    static final int GENERATION_BITS = 47;
    /** The last generation a latch can open: at a million generations a second, 4 years. */
    static final long MAX_GENERATION = (1L << GENERATION_BITS) - 1;
    static final int TAG_MASK = 0xFFFF;

    private static final int PHASE_BITS = 3;
    private static final int RECIPIENT_STATE_BITS = 2;
    private static final ValidationPhase[] PHASES = ValidationPhase.values();
    private static final RecipientState[] RECIPIENT_STATES = RecipientState.values();

    private LatchWords() {
    }

    static long coordinator(ValidationPhase phase, long generation) {
        return generation << PHASE_BITS | phase.ordinal();
    }

    static ValidationPhase phase(long coordinator) {
        return PHASES[(int) (coordinator & ((1 << PHASE_BITS) - 1))];
    }

    static long generation(long coordinator) {
        return coordinator >>> PHASE_BITS;
    }

    static long recipient(RecipientState state, long generation) {
        return generation << RECIPIENT_STATE_BITS | state.ordinal();
    }

    static RecipientState recipientState(long recipient) {
        return RECIPIENT_STATES[(int) (recipient & ((1 << RECIPIENT_STATE_BITS) - 1))];
    }

    static long recipientGeneration(long recipient) {
        return recipient >>> RECIPIENT_STATE_BITS;
    }

    static long token(int tag, long generation) {
        return (long) tag << GENERATION_BITS | generation;
    }

    /** The tag of a token; a negative (forged) token yields a value no latch has. */
    static long tokenTag(long token) {
        return token >>> GENERATION_BITS;
    }

    static long tokenGeneration(long token) {
        return token & MAX_GENERATION;
    }
}
