package dev.gatun.cuda.bench;

import java.util.Collection;

/** The median of measurements, as the comparison reports every value. */
final class Medians {

    private Medians() {
    }

    /** The median (the mean of the middle two for an even count); NaN when there are none. */
    static double of(Collection<Double> values) {
        double[] sorted = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        if (sorted.length == 0) {
            return Double.NaN;
        }
        int mid = sorted.length / 2;
        return sorted.length % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
    }
}
