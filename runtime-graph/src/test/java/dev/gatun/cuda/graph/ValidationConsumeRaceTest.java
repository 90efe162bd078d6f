package dev.gatun.cuda.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * Many threads consume one generation at once, released by one barrier per round. Exactly one of
 * them may read the device word; all must return the flags that were raised.
 */
class ValidationConsumeRaceTest {

    private static final int RECIPIENTS = 6;
    /** More threads than recipients: some recipients are consumed by two threads at once. */
    private static final int THREADS = 9;
    private static final int ROUNDS = 300;

    @Test
    void exactlyOneConsumerReadsAndEveryConsumerGetsTheSameFlags() throws Exception {
        FakeLatchWord word = new FakeLatchWord();
        runRounds(word, round -> { }, (round, outcomes) -> {
            for (Object outcome : outcomes) {
                assertEquals(flagsOf(round), outcome, "round " + round);
            }
            assertEquals(round + 1, word.reads(), "one read per generation, round " + round);
        });
        assertEquals(ROUNDS, word.readAttempts());
    }

    @Test
    void whenTheFirstReadFailsOneConsumerSeesTheErrorAndAnotherRetriesForEveryone() throws Exception {
        FakeLatchWord word = new FakeLatchWord();
        runRounds(word, round -> word.failNextReads(1), (round, outcomes) -> {
            long failures = outcomes.stream().filter(ValidationLatchException.class::isInstance).count();
            assertEquals(1, failures, "round " + round);
            for (Object outcome : outcomes) {
                if (!(outcome instanceof ValidationLatchException)) {
                    assertEquals(flagsOf(round), outcome, "round " + round);
                }
            }
            assertEquals(round + 1, word.reads(), "round " + round);
        });
        assertEquals(2 * ROUNDS, word.readAttempts());
    }

    private static int flagsOf(int round) {
        return LatchFlags.OUT_OF_RANGE | LatchFlags.user(round % LatchFlags.USER_BITS);
    }

    private interface RoundSetup {
        void prepare(int round);
    }

    private interface RoundCheck {
        void check(int round, List<Object> outcomes);
    }

    /**
     * Each round opens a generation for every recipient, raises the round's flags and lets all
     * threads consume it together. An outcome is the flags a thread got, or the exception it got.
     */
    private static void runRounds(FakeLatchWord word, RoundSetup setup, RoundCheck check) throws Exception {
        ValidationLatch latch = new ValidationLatch(word);
        List<ValidationRecipient> recipients = new ArrayList<>();
        for (int i = 0; i < RECIPIENTS; i++) {
            recipients.add(latch.register("recipient-" + i));
        }
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        try {
            for (int round = 0; round < ROUNDS; round++) {
                long token = latch.begin(recipients.get(0));
                for (ValidationRecipient recipient : recipients) {
                    latch.attach(recipients.get(0), token, recipient);
                }
                latch.activate(recipients.get(0), token);
                word.raise(flagsOf(round));
                setup.prepare(round);

                CyclicBarrier start = new CyclicBarrier(THREADS);
                List<Future<Object>> futures = new ArrayList<>();
                for (int t = 0; t < THREADS; t++) {
                    ValidationRecipient recipient = recipients.get(t % RECIPIENTS);
                    futures.add(pool.submit(() -> {
                        start.await();
                        try {
                            return latch.consume(recipient, token);
                        } catch (ValidationLatchException e) {
                            return e;
                        }
                    }));
                }
                List<Object> outcomes = new ArrayList<>();
                for (Future<Object> future : futures) {
                    outcomes.add(future.get());
                }
                // A consumer that failed leaves the generation pending; the others retried it, so
                // by now it is consumed either way.
                assertEquals(ValidationPhase.IDLE, latch.phase());
                check.check(round, outcomes);
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
