package dev.gatun.cuda.gpu.load;

import java.util.Locale;

/** Whether a series stays flat after warm-up: its least-squares slope against a bound. */
public final class Flatness {

    /** Fewer samples than this after warm-up give no trustworthy slope: the verdict is "not flat". */
    public static final int MIN_SAMPLES = 3;

    private Flatness() {
    }

    /**
     * The verdict on one series.
     *
     * @param slopePerMinute the least-squares slope after warm-up, in the series' unit per minute (NaN without enough samples)
     * @param samples how many samples after warm-up it was computed from
     */
    public record Verdict(String name, String unit, double slopePerMinute, double boundPerMinute, int samples, boolean flat) {

        /** One line for the log: name, slope, bound and verdict. */
        public String describe() {
            if (samples < MIN_SAMPLES) {
                return String.format(Locale.ROOT, "%-22s NOT FLAT: only %d samples after warm-up, need %d (run longer)",
                        name, samples, MIN_SAMPLES);
            }
            return String.format(Locale.ROOT, "%-22s slope %+.4g %s/min, bound %.4g %s/min: %s", name, slopePerMinute,
                    unit, boundPerMinute, unit, flat ? "flat" : "NOT FLAT");
        }
    }

    /**
     * The slope of the least-squares line through (x[i], y[i]).
     *
     * @throws IllegalArgumentException when the arrays differ in length, hold fewer than two
     *     points, or all x are equal (no line is defined)
     */
    public static double slope(double[] x, double[] y) {
        if (x.length != y.length) {
            throw new IllegalArgumentException(x.length + " x values but " + y.length + " y values");
        }
        if (x.length < 2) {
            throw new IllegalArgumentException("a slope needs at least 2 points, got " + x.length);
        }
        double meanX = 0;
        double meanY = 0;
        for (int i = 0; i < x.length; i++) {
            meanX += x[i];
            meanY += y[i];
        }
        meanX /= x.length;
        meanY /= y.length;
        // Centred sums: no cancellation from large absolute times or byte counts.
        double sxy = 0;
        double sxx = 0;
        for (int i = 0; i < x.length; i++) {
            double dx = x[i] - meanX;
            sxy += dx * (y[i] - meanY);
            sxx += dx * dx;
        }
        if (sxx == 0) {
            throw new IllegalArgumentException("all " + x.length + " x values are equal; no slope is defined");
        }
        return sxy / sxx;
    }

    /** The verdict on {@code series} over its samples at or after {@code warmupSeconds}. */
    public static Verdict judge(Series series, double warmupSeconds) {
        double[] t = series.seconds();
        double[] v = series.values();
        int first = 0;
        while (first < t.length && t[first] < warmupSeconds) {
            first++;
        }
        int n = t.length - first;
        if (n < MIN_SAMPLES) {
            return new Verdict(series.name(), series.unit(), Double.NaN, series.boundPerMinute(), n, false);
        }
        double[] minutes = new double[n];
        double[] values = new double[n];
        for (int i = 0; i < n; i++) {
            minutes[i] = t[first + i] / 60.0;
            values[i] = v[first + i];
        }
        double s = slope(minutes, values);
        return new Verdict(series.name(), series.unit(), s, series.boundPerMinute(), n, Math.abs(s) <= series.boundPerMinute());
    }
}
