package dev.gatun.cuda.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * Bits a replayed kernel raised belong to the generation that is open, not to the graph: resetting
 * or retiring the graph before the request boundary must not lose them.
 */
class LatchSurvivesGraphResetTest {

    @Test
    void bitsRaisedByAReplayAreConsumedAfterTheGraphIsReset() {
        FakeLatchWord word = new FakeLatchWord();
        ValidationLatch latch = new ValidationLatch(word);
        ValidationRecipient recipient = latch.register("session");
        try (SimulatedGraphs gpu = new SimulatedGraphs()) {
            SlotGroup graphs = new GraphLifecycles().registerGroup("session");
            GraphSlot slot = graphs.slot("decode");
            gpu.capture(slot, "stream", 0, 1);
            // The captured kernel finds an out-of-range index every time it runs.
            gpu.onEachRun(() -> word.raise(LatchFlags.OUT_OF_RANGE));

            long token = latch.begin(recipient);
            latch.activate(recipient, token);
            slot.replay(gpu.stream("stream"));
            assertTrue(slot.reset());
            graphs.retire();

            assertEquals(LatchFlags.OUT_OF_RANGE, latch.consume(recipient, token));
            assertEquals(1, word.clears(), "only the begin cleared the word");
        }
    }
}
