package dev.gatun.cuda.gpu.load;

import java.util.Arrays;
import java.util.Objects;

/**
 * One sampled quantity of a soak run: (seconds since start, value) pairs, with the unit and the
 * largest slope (unit per minute, either sign) that still counts as flat after warm-up.
 */
public final class Series {

    private final String name;
    private final String unit;
    private final double boundPerMinute;
    private double[] seconds = new double[16];
    private double[] values = new double[16];
    private int size;

    public Series(String name, String unit, double boundPerMinute) {
        this.name = Objects.requireNonNull(name, "name");
        this.unit = Objects.requireNonNull(unit, "unit");
        if (!(boundPerMinute >= 0)) {
            throw new IllegalArgumentException("the slope bound of " + name + " is " + boundPerMinute + "; give one >= 0");
        }
        this.boundPerMinute = boundPerMinute;
    }

    /** Adds a sample; times must not go backwards. */
    public synchronized void add(double atSeconds, double value) {
        if (size > 0 && atSeconds < seconds[size - 1]) {
            throw new IllegalArgumentException(name + ": sample at " + atSeconds + " s is before the previous one at "
                    + seconds[size - 1] + " s");
        }
        if (size == seconds.length) {
            seconds = Arrays.copyOf(seconds, size * 2);
            values = Arrays.copyOf(values, size * 2);
        }
        seconds[size] = atSeconds;
        values[size] = value;
        size++;
    }

    public String name() {
        return name;
    }

    public String unit() {
        return unit;
    }

    public double boundPerMinute() {
        return boundPerMinute;
    }

    public synchronized int size() {
        return size;
    }

    public synchronized double[] seconds() {
        return Arrays.copyOf(seconds, size);
    }

    public synchronized double[] values() {
        return Arrays.copyOf(values, size);
    }
}
