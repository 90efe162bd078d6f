package dev.gatun.cuda.gpu.load;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class FlatnessTest {

    @Test
    void theSlopeOfPointsOnALineIsItsGradientAndNoiseAboutAFlatLineAveragesOut() {
        assertEquals(2.5, Flatness.slope(new double[] {0, 1, 2, 3}, new double[] {1, 3.5, 6, 8.5}), 1e-12);
        assertEquals(0.0, Flatness.slope(new double[] {0, 1, 2, 3}, new double[] {5, 7, 5, 7}) - 0.4, 1e-12);
        // Large absolute values (bytes, seconds since an epoch) do not cancel out.
        assertEquals(-3.0, Flatness.slope(new double[] {1e9, 1e9 + 1, 1e9 + 2}, new double[] {7e10, 7e10 - 3, 7e10 - 6}), 1e-6);
    }

    @Test
    void noSlopeWithoutTwoDistinctTimesOrWithMismatchedArrays() {
        assertThrows(IllegalArgumentException.class, () -> Flatness.slope(new double[] {1}, new double[] {1}));
        assertThrows(IllegalArgumentException.class, () -> Flatness.slope(new double[] {2, 2}, new double[] {1, 5}));
        assertThrows(IllegalArgumentException.class, () -> Flatness.slope(new double[] {1, 2}, new double[] {1}));
    }

    @Test
    void warmUpIsLeftOutAndTheSlopeIsPerMinute() {
        Series s = new Series("heap", "MiB", 1.0);
        s.add(0, 100); // warm-up: a steep rise
        s.add(30, 400);
        for (int i = 0; i < 10; i++) {
            s.add(60 + 60 * i, 400 + 0.5 * i); // +0.5 MiB a minute
        }
        Flatness.Verdict v = Flatness.judge(s, 60);
        assertEquals(10, v.samples());
        assertEquals(0.5, v.slopePerMinute(), 1e-9);
        assertTrue(v.flat(), v.describe());
        assertTrue(v.describe().contains("flat"), v.describe());
    }

    @Test
    void aGrowthAboveTheBoundIsNotFlatEitherWay() {
        Series rising = new Series("device", "MiB", 1.0);
        Series falling = new Series("threads", "threads", 1.0);
        for (int i = 0; i < 6; i++) {
            rising.add(10 * i, 2.0 * i); // 12 MiB a minute
            falling.add(10 * i, -2.0 * i);
        }
        Flatness.Verdict up = Flatness.judge(rising, 0);
        assertEquals(12.0, up.slopePerMinute(), 1e-9);
        assertFalse(up.flat());
        assertTrue(up.describe().contains("NOT FLAT"), up.describe());
        assertFalse(Flatness.judge(falling, 0).flat());
    }

    @Test
    void tooFewSamplesAfterWarmUpAreNotFlat() {
        Series s = new Series("native", "MiB", 100);
        s.add(0, 1);
        s.add(100, 1);
        s.add(200, 1);
        Flatness.Verdict v = Flatness.judge(s, 50);
        assertEquals(2, v.samples());
        assertFalse(v.flat());
        assertTrue(v.describe().contains("only 2 samples after warm-up"), v.describe());
    }

    @Test
    void samplesMustNotGoBackInTime() {
        Series s = new Series("x", "u", 1);
        s.add(5, 0);
        assertThrows(IllegalArgumentException.class, () -> s.add(4, 0));
        assertThrows(IllegalArgumentException.class, () -> new Series("x", "u", Double.NaN));
    }
}
