package dev.gatun.cuda.bench;

import java.util.Locale;

/**
 * What one row must show to meet issue 11's goal. A ratio goal is claimed only from the
 * median of at least {@link #MIN_PAIRS} interleaved C/Gatun pairs of one run: single runs on
 * different machine starts scatter too widely to claim anything.
 */
public sealed interface Goal {

    /** Pairs (or Gatun runs, for an absolute goal) needed before a goal is met or missed. */
    int MIN_PAIRS = 5;

    /**
     * What a row measured, as the goals read it; {@code rowPairs} and {@code rowRatio} compare
     * its Gatun runs with those of the row a {@link RowRatioAtMost} names (0 and NaN for others).
     */
    record Evidence(int pairs, double ratio, double extraNanos, int gatunRuns, double gatunMicros, int rowPairs,
            double rowRatio) {
    }

    /** The goal as the table prints it, e.g. {@code "≤ 1.05× C"}; empty for no goal. */
    String text();

    Verdict judge(Evidence evidence);

    /** Gatun's time per operation at most {@code max} times C's (median of per-round ratios). */
    record RatioAtMost(double max) implements Goal {
        @Override
        public String text() {
            return "≤ " + bound(max) + "× C";
        }

        @Override
        public Verdict judge(Evidence e) {
            return pairs(e.pairs()) != null ? pairs(e.pairs())
                    : e.ratio() <= max ? Verdict.met() : Verdict.missed(number(e.ratio()) + "× > " + bound(max) + "×");
        }
    }

    /** Gatun's bandwidth at least {@code min} times C's (median of per-round ratios). */
    record BandwidthAtLeast(double min) implements Goal {
        @Override
        public String text() {
            return "≥ " + bound(min) + "× C's GB/s";
        }

        @Override
        public Verdict judge(Evidence e) {
            return pairs(e.pairs()) != null ? pairs(e.pairs())
                    : e.ratio() >= min ? Verdict.met() : Verdict.missed(number(e.ratio()) + "× < " + bound(min) + "×");
        }
    }

    /** Gatun's time per operation at most C's plus {@code nanos} (median of per-round differences). */
    record ExtraNanosAtMost(double nanos) implements Goal {
        @Override
        public String text() {
            return "≤ C + " + bound(nanos) + " ns";
        }

        @Override
        public Verdict judge(Evidence e) {
            return pairs(e.pairs()) != null ? pairs(e.pairs())
                    : e.extraNanos() <= nanos ? Verdict.met()
                    : Verdict.missed(plusNanos(e.extraNanos()));
        }
    }

    /** Gatun's time per operation at most {@code micros} (median of its runs): an absolute goal, with or without a C twin. */
    record MicrosAtMost(double micros) implements Goal {
        @Override
        public String text() {
            return "≤ " + bound(micros) + " µs";
        }

        @Override
        public Verdict judge(Evidence e) {
            if (e.gatunRuns() < MIN_PAIRS) {
                return Verdict.undecided(e.gatunRuns() + " runs (< " + MIN_PAIRS + ")");
            }
            return e.gatunMicros() <= micros ? Verdict.met()
                    : Verdict.missed(number(e.gatunMicros()) + " µs > " + bound(micros) + " µs");
        }
    }

    /**
     * Gatun's time per operation at most {@code max} times Gatun's on the row {@code row} (median
     * of per-round ratios, both rows run in the same round): a speedup one Gatun path must show
     * over another, e.g. a batch of copies over the same copies one at a time.
     */
    record RowRatioAtMost(String row, double max) implements Goal {
        @Override
        public String text() {
            return "≤ " + bound(max) + "× " + row;
        }

        @Override
        public Verdict judge(Evidence e) {
            return pairs(e.rowPairs()) != null ? pairs(e.rowPairs())
                    : e.rowRatio() <= max ? Verdict.met()
                    : Verdict.missed(number(e.rowRatio()) + "× > " + bound(max) + "×");
        }
    }

    /** No time goal (the row is reported for context, e.g. a GPU-bound replay). */
    enum None implements Goal {
        INSTANCE;

        @Override
        public String text() {
            return "";
        }

        @Override
        public Verdict judge(Evidence e) {
            return Verdict.none();
        }
    }

    private static Verdict pairs(int pairs) {
        return pairs < MIN_PAIRS ? Verdict.undecided(pairs + " pairs (< " + MIN_PAIRS + ")") : null;
    }

    /** A difference to C as the table prints it: {@code "C + 23 ns"}, {@code "C − 4.0 ns"}. */
    static String plusNanos(double nanos) {
        return (nanos < 0 ? "C − " : "C + ") + number(Math.abs(nanos)) + " ns";
    }

    /** A goal's bound as the issue writes it: {@code 1.05}, {@code 0.5}, {@code 50}. */
    static String bound(double v) {
        return java.math.BigDecimal.valueOf(v).stripTrailingZeros().toPlainString();
    }

    /** A measured number as the table prints it: 3 significant digits, no exponent. */
    static String number(double v) {
        if (Double.isNaN(v)) {
            return "–";
        }
        double a = Math.abs(v);
        String pattern = a >= 100 ? "%.0f" : a >= 10 ? "%.1f" : a >= 1 ? "%.2f" : "%.3f";
        return String.format(Locale.ROOT, pattern, v);
    }
}
