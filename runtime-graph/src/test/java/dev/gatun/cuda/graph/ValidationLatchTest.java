package dev.gatun.cuda.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.graph.FakeLatchWord.FakeWordException;
import org.junit.jupiter.api.Test;

class ValidationLatchTest {

    private static final int BAD_INPUT = LatchFlags.OUT_OF_RANGE | LatchFlags.user(3);

    private final FakeLatchWord word = new FakeLatchWord();
    private final ValidationLatch latch = new ValidationLatch(word);
    private final ValidationRecipient a = latch.register("a");
    private final ValidationRecipient b = latch.register("b");
    private final ValidationRecipient c = latch.register("c");

    /** a begins, b attaches, a activates, kernels raise {@code raised}. */
    private long openedWith(int raised) {
        long token = latch.begin(a);
        latch.attach(a, token, b);
        latch.activate(a, token);
        word.raise(raised);
        return token;
    }

    @Test
    void oneConsumerReadsTheWordAndEveryRecipientGetsTheSameFlags() {
        word.raise(0x80); // left over from before the generation: the begin clears it
        long token = latch.begin(a);
        assertEquals(1, word.clears());
        assertEquals(ValidationPhase.PREPARING, latch.phase());
        latch.attach(a, token, b);
        latch.activate(a, token);
        assertEquals(ValidationPhase.ACTIVE, latch.phase());
        word.raise(BAD_INPUT);

        assertEquals(BAD_INPUT, latch.consume(b, token));
        assertEquals(ValidationPhase.IDLE, latch.phase());
        assertEquals(BAD_INPUT, latch.consume(a, token));
        assertEquals(BAD_INPUT, latch.consume(b, token), "the result is sticky");
        assertEquals(1, word.reads());
        assertEquals(0, word.bits(), "consuming clears the word");
        assertEquals(new ValidationCounters(1, 1, 3), latch.counters());
        LatchMisuse.NOT_RECIPIENT.assertRefuses(() -> latch.consume(c, token));
    }

    @Test
    void aCleanGenerationConsumesToZero() {
        long token = openedWith(0);
        assertEquals(0, latch.consume(a, token));
        assertEquals(0, latch.consume(b, token));
    }

    @Test
    void aResultStaysUntilItsOwnerJoinsAnotherGeneration() {
        long first = openedWith(BAD_INPUT);
        assertEquals(BAD_INPUT, latch.consume(a, first));

        long second = latch.begin(a);
        assertNotEquals(first, second);
        LatchMisuse.STALE.assertRefuses(() -> latch.consume(a, first));
        assertEquals(BAD_INPUT, latch.consume(b, first), "b did not join the second generation");
        latch.activate(a, second);
        assertEquals(0, latch.consume(a, second));
    }

    @Test
    void beginIsRefusedWhileAGenerationIsOpen() {
        long token = latch.begin(a);
        LatchMisuse.STILL_OPEN.assertRefuses(() -> latch.begin(b));
        latch.activate(a, token);
        RuntimeException refused = LatchMisuse.STILL_OPEN.assertRefuses(() -> latch.begin(a));
        assertTrue(refused.getMessage().contains("generation 1 is still ACTIVE"), refused.getMessage());
        assertEquals(ValidationPhase.ACTIVE, latch.phase());
        assertEquals(1, latch.generation());
        assertEquals(1, word.clears());
    }

    @Test
    void foreignTokensAndOwnersAreRejectedAndChangeNothing() {
        FakeLatchWord otherWord = new FakeLatchWord();
        ValidationLatch other = new ValidationLatch(otherWord);
        ValidationRecipient stranger = other.register("stranger");
        long theirs = other.begin(stranger);
        long ours = latch.begin(a);

        LatchMisuse.FOREIGN.assertRefuses(() -> latch.attach(a, theirs, b));
        LatchMisuse.FOREIGN.assertRefuses(() -> latch.activate(a, theirs));
        LatchMisuse.FOREIGN.assertRefuses(() -> latch.consume(a, theirs));
        LatchMisuse.FOREIGN.assertRefuses(() -> latch.attach(a, ours, stranger));
        LatchMisuse.FOREIGN.assertRefuses(() -> latch.consume(stranger, ours));
        LatchMisuse.FOREIGN.assertRefuses(() -> latch.begin(stranger));
        LatchMisuse.FOREIGN.assertRefuses(() -> latch.unregister(stranger));
        LatchMisuse.FOREIGN.assertRefuses(() -> latch.consume(a, ours + 5));
        LatchMisuse.FOREIGN.assertRefuses(() -> latch.activate(a, ours + 5));
        LatchMisuse.FOREIGN.assertRefuses(() -> latch.consume(a, 0));
        LatchMisuse.FOREIGN.assertRefuses(() -> latch.consume(a, -ours));

        assertEquals(ValidationPhase.PREPARING, latch.phase());
        assertEquals(ValidationPhase.PREPARING, other.phase());
        latch.activate(a, ours);
        assertEquals(0, latch.consume(a, ours));
        assertEquals(0, otherWord.reads());
    }

    @Test
    void staleTokensAreRejected() {
        long first = openedWith(0);
        latch.consume(a, first);
        long second = latch.begin(b);

        LatchMisuse.STALE.assertRefuses(() -> latch.attach(a, first, c));
        LatchMisuse.STALE.assertRefuses(() -> latch.activate(a, first));
        latch.activate(b, second);
        latch.consume(b, second);
        LatchMisuse.STALE.assertRefuses(() -> latch.activate(b, second));
        LatchMisuse.STALE.assertRefuses(() -> latch.attach(b, second, c));
        assertEquals(ValidationPhase.IDLE, latch.phase());
    }

    @Test
    void onlyTheSubmitterAttachesAndActivates() {
        long token = latch.begin(a);
        LatchMisuse.NOT_SUBMITTER.assertRefuses(() -> latch.attach(b, token, c));
        LatchMisuse.NOT_SUBMITTER.assertRefuses(() -> latch.activate(b, token));
        LatchMisuse.NOT_RECIPIENT.assertRefuses(() -> latch.consume(c, token));
        assertEquals(ValidationPhase.PREPARING, latch.phase());

        latch.activate(a, token);
        LatchMisuse.NOT_RECIPIENT.assertRefuses(() -> latch.consume(b, token));
        assertEquals(ValidationPhase.ACTIVE, latch.phase());
    }

    @Test
    void attachingOrActivatingAnActiveGenerationIsRefused() {
        long token = latch.begin(a);
        latch.activate(a, token);
        LatchMisuse.ALREADY_ACTIVE.assertRefuses(() -> latch.attach(a, token, b));
        LatchMisuse.ALREADY_ACTIVE.assertRefuses(() -> latch.activate(a, token));
        assertEquals(ValidationPhase.ACTIVE, latch.phase());
        LatchMisuse.NOT_RECIPIENT.assertRefuses(() -> latch.consume(b, token));
    }

    @Test
    void attachingARecipientTwiceChangesNothing() {
        long token = latch.begin(a);
        latch.attach(a, token, b);
        latch.attach(a, token, b);
        latch.attach(a, token, a);
        latch.attach(a, token, c);
        latch.activate(a, token);
        word.raise(BAD_INPUT);

        assertEquals(BAD_INPUT, latch.consume(c, token));
        assertEquals(BAD_INPUT, latch.consume(b, token));
        assertEquals(BAD_INPUT, latch.consume(a, token));
        assertEquals(1, word.reads());
    }

    @Test
    void generationsNeverWrap() {
        ValidationLatch small = new ValidationLatch(word, 3);
        ValidationRecipient only = small.register("only");
        long last = 0;
        for (int i = 0; i < 3; i++) {
            last = small.begin(only);
            small.activate(only, last);
            small.consume(only, last);
        }
        word.raise(BAD_INPUT);

        ValidationLatchException exhausted = assertThrows(ValidationLatchException.class, () -> small.begin(only));
        assertTrue(exhausted.getMessage().contains("create a new latch"), exhausted.getMessage());
        assertEquals(ValidationPhase.IDLE, small.phase());
        assertEquals(3, small.generation());
        assertEquals(BAD_INPUT, word.bits(), "an exhausted begin must not clear the word");
        assertEquals(0, small.consume(only, last), "the last generation's result is still there");
        assertThrows(ValidationLatchException.class, () -> small.begin(only));
        assertThrows(IllegalArgumentException.class, () -> new ValidationLatch(word, 0));
    }

    @Test
    void aFailedClearOpensNothingAndSpendsItsNumber() {
        long first = openedWith(BAD_INPUT);
        latch.consume(a, first);
        word.failNextClears(1);

        ValidationLatchException failure = assertThrows(ValidationLatchException.class, () -> latch.begin(a));
        assertInstanceOf(FakeWordException.class, failure.getCause());
        assertEquals(ValidationPhase.IDLE, latch.phase());
        assertEquals(BAD_INPUT, latch.consume(a, first), "a's earlier result is untouched");
        assertEquals(1, latch.counters().generationsBegun());

        long next = latch.begin(a);
        assertEquals(3, latch.generation(), "generation 2 was spent by the failed begin");
        latch.activate(a, next);
        assertEquals(0, latch.consume(a, next));
    }

    @Test
    void aFailedReadPublishesNothingAndTheGenerationCanBeConsumedAgain() {
        long token = openedWith(BAD_INPUT);
        word.failNextReads(1);

        ValidationLatchException failure = assertThrows(ValidationLatchException.class, () -> latch.consume(b, token));
        assertTrue(failure.getMessage().contains("consume it again"), failure.getMessage());
        assertEquals(ValidationPhase.ACTIVE, latch.phase());
        assertEquals(0, latch.counters().cleanups());

        assertEquals(BAD_INPUT, latch.consume(a, token));
        assertEquals(BAD_INPUT, latch.consume(b, token));
        assertEquals(2, word.readAttempts());
        assertEquals(1, word.reads());
        assertEquals(1, latch.counters().cleanups());
    }

    @Test
    void unregisteringAnOwnerWithAPendingGenerationConsumesItFirst() {
        long token = openedWith(BAD_INPUT);
        latch.unregister(b);

        assertEquals(ValidationPhase.IDLE, latch.phase());
        assertEquals(1, word.reads());
        assertEquals(BAD_INPUT, latch.consume(a, token), "the other recipient still gets the result");
        assertEquals(2, latch.counters().registeredRecipients());
        LatchMisuse.UNREGISTERED.assertRefuses(() -> latch.unregister(b));
        LatchMisuse.UNREGISTERED.assertRefuses(() -> latch.consume(b, token));
        LatchMisuse.UNREGISTERED.assertRefuses(() -> latch.begin(b));
        long next = latch.begin(a);
        LatchMisuse.UNREGISTERED.assertRefuses(() -> latch.attach(a, next, b));
        assertEquals(ValidationPhase.PREPARING, latch.phase(), "a refused attach restores the phase");
        latch.activate(a, next);
        assertEquals(0, latch.consume(a, next));
    }

    @Test
    void aFailedReadDuringUnregisterKeepsTheOwnerRegistered() {
        long token = openedWith(BAD_INPUT);
        word.failNextReads(1);

        assertThrows(ValidationLatchException.class, () -> latch.unregister(b));
        assertEquals(3, latch.counters().registeredRecipients());
        assertEquals(ValidationPhase.ACTIVE, latch.phase());
        latch.unregister(b);
        assertEquals(2, latch.counters().registeredRecipients());
        assertEquals(BAD_INPUT, latch.consume(a, token));
    }

    @Test
    void unregisteringAnIdleOwnerReadsNothing() {
        latch.unregister(c);
        assertEquals(0, word.readAttempts());
        assertEquals(2, latch.counters().registeredRecipients());
        assertThrows(IllegalArgumentException.class, () -> latch.register(" "));
    }

    @Test
    void consumingAGenerationStillPreparingEndsItEarly() {
        long token = latch.begin(a);
        latch.attach(a, token, b);
        word.raise(BAD_INPUT);

        assertEquals(BAD_INPUT, latch.consume(b, token), "the word is read even before activation");
        assertEquals(ValidationPhase.IDLE, latch.phase());
        LatchMisuse.STALE.assertRefuses(() -> latch.activate(a, token));
        assertEquals(BAD_INPUT, latch.consume(a, token));
    }
}
