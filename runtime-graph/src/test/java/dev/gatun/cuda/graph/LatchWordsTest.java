package dev.gatun.cuda.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;

class LatchWordsTest {

    private static final long MAX = (1L << 47) - 1;

    @Property
    void coordinatorWordsRoundTrip(@ForAll ValidationPhase phase,
            @ForAll @LongRange(min = 0, max = MAX) long generation) {
        long word = LatchWords.coordinator(phase, generation);
        assertEquals(phase, LatchWords.phase(word));
        assertEquals(generation, LatchWords.generation(word));
    }

    @Property
    void recipientWordsRoundTrip(@ForAll RecipientState state, @ForAll @LongRange(min = 0, max = MAX) long generation) {
        long word = LatchWords.recipient(state, generation);
        assertEquals(state, LatchWords.recipientState(word));
        assertEquals(generation, LatchWords.recipientGeneration(word));
    }

    @Property
    void tokensRoundTripAndStayPositive(@ForAll @IntRange(min = 0, max = 0xFFFF) int tag,
            @ForAll @LongRange(min = 1, max = MAX) long generation) {
        long token = LatchWords.token(tag, generation);
        assertTrue(token > 0);
        assertEquals(tag, LatchWords.tokenTag(token));
        assertEquals(generation, LatchWords.tokenGeneration(token));
    }
}
