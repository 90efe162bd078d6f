package dev.gatun.testkit;

import dev.gatun.cuda.Cuda;
import java.util.Arrays;
import java.util.Locale;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;

/**
 * Where the tests of a {@link GpuOrSimulated} class run: the value of
 * {@value #SETTING}, a JUnit configuration parameter or system property.
 */
public enum TestTarget {
    /** Always on the simulated driver, GPU or not. */
    SIMULATED,
    /** Always on device 0 of the real driver; a machine without one fails the tests, with the loader's reason. */
    GPU,
    /** On device 0 of the real driver where Gatun finds one with a device, else on the simulated driver. The default. */
    AUTO;

    /** The setting's name: {@code -Dgatun.testkit.target=simulated|gpu|auto}, or the same key in junit-platform.properties. */
    public static final String SETTING = "gatun.testkit.target";

    /**
     * The target a setting's value names: {@code simulated}, {@code gpu} or {@code auto}, in any
     * case, surrounding blanks ignored; unset means {@link #AUTO}.
     *
     * @param value the value; null when the setting is unset
     * @return the target
     * @throws IllegalArgumentException for any other value, the empty one included, naming the
     *     setting and what it accepts: a misspelt value must not quietly run a GPU host's tests
     *     on the simulator
     */
    public static TestTarget parse(String value) {
        if (value == null) {
            return AUTO;
        }
        String wanted = value.strip().toUpperCase(Locale.ROOT);
        for (TestTarget target : values()) {
            if (target.name().equals(wanted)) {
                return target;
            }
        }
        throw new IllegalArgumentException(SETTING + " is '" + value + "'; set it to "
                + Arrays.stream(values()).map(t -> t.name().toLowerCase(Locale.ROOT)).collect(Collectors.joining(", "))
                + " (any case), or leave it unset for auto");
    }

    /**
     * Whether this target runs on the real GPU.
     *
     * @param gpuPresent whether Gatun's loader finds a driver that reports a device; asked only
     *     for {@link #AUTO}, so that the other targets never load the driver to decide
     * @return true for {@link #GPU}, and for {@link #AUTO} when a GPU is present
     */
    boolean onGpu(BooleanSupplier gpuPresent) {
        return this == GPU || this == AUTO && gpuPresent.getAsBoolean();
    }

    /**
     * Whether Gatun's own loader finds a usable GPU: a driver that loads, initializes and reports
     * at least one device.
     *
     * @return whether {@link Cuda#system()} has a device 0
     */
    static boolean gpuPresent() {
        return Cuda.isAvailable() && Cuda.system().deviceCount() > 0;
    }
}
