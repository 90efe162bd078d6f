package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.gpu.load.OperationMix;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The stress test's operation mix: replayable from its seed, and drawn in proportion to the weights. */
class OperationMixTest {

    private static List<StressOperation> draw(long seed, int n) {
        OperationMix<StressOperation> mix = new OperationMix<>(StressOperation.class, StressOperation.WEIGHTS, seed);
        List<StressOperation> ops = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            ops.add(mix.next());
        }
        return ops;
    }

    @Test
    void theSameSeedGivesTheSameSequenceAndAnotherSeedAnother() {
        assertEquals(draw(7, 1000), draw(7, 1000));
        assertNotEquals(draw(7, 1000), draw(8, 1000));
    }

    @Test
    void everyKindIsDrawnInProportionToItsWeight() {
        int n = 200_000;
        EnumMap<StressOperation, Integer> counts = new EnumMap<>(StressOperation.class);
        for (StressOperation op : draw(42, n)) {
            counts.merge(op, 1, Integer::sum);
        }
        int total = StressOperation.WEIGHTS.values().stream().mapToInt(Integer::intValue).sum();
        for (StressOperation op : StressOperation.values()) {
            double expected = (double) n * StressOperation.WEIGHTS.get(op) / total;
            int got = counts.getOrDefault(op, 0);
            // 6 standard deviations of a binomial count: a correct mix fails this about once in 10^8 seeds.
            double allowed = 6 * Math.sqrt(expected);
            assertTrue(Math.abs(got - expected) <= allowed, op + " drawn " + got + " times, expected " + expected);
        }
    }

    private enum Two { A, B }

    @Test
    void aKindLeftOutIsNeverDrawnAndABadWeightIsRefused() {
        OperationMix<Two> mix = new OperationMix<>(Two.class, Map.of(Two.B, 3), 1);
        for (int i = 0; i < 100; i++) {
            assertEquals(Two.B, mix.next());
        }
        assertThrows(IllegalArgumentException.class, () -> new OperationMix<>(Two.class, Map.of(Two.A, 0), 1));
        assertThrows(IllegalArgumentException.class, () -> new OperationMix<>(Two.class, Map.of(), 1));
    }
}
