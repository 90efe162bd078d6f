package dev.gatun.cuda.doctor;

/**
 * The verdict of a {@link Doctor#diagnose(Appendable)} report: how many devices Gatun can use,
 * and how many of its settings need attention. The report itself says which and why.
 *
 * @param usableDevices the devices whose properties the driver reported; 0 without a driver
 * @param settingsNeedingAttention the settings the report marks {@code WRONG}, {@code NOT USED},
 *     {@code NOT WRITABLE} or {@code ABORTS}
 */
public record Diagnosis(int usableDevices, int settingsNeedingAttention) {

    /** {@link #exitStatus()} when a device is usable and every setting works. */
    public static final int EXIT_OK = 0;
    /** {@link #exitStatus()} when no device is usable, whatever the settings. */
    public static final int EXIT_NO_DEVICE = 3;
    /** {@link #exitStatus()} when a device is usable but a setting needs attention. */
    public static final int EXIT_BAD_SETTINGS = 4;

    /**
     * Checks the counts.
     *
     * @throws IllegalArgumentException when a count is negative
     */
    public Diagnosis {
        if (usableDevices < 0 || settingsNeedingAttention < 0) {
            throw new IllegalArgumentException("counts cannot be negative: " + usableDevices + " usable devices, "
                    + settingsNeedingAttention + " settings needing attention");
        }
    }

    /** {@return whether at least one device is usable: GPU work can run} */
    public boolean hasUsableGpu() {
        return usableDevices > 0;
    }

    /** {@return whether every setting works as written} */
    public boolean isEverySettingRight() {
        return settingsNeedingAttention == 0;
    }

    /**
     * {@return the exit status of {@code gatun doctor}: {@value #EXIT_OK} with a usable device and
     * working settings, {@value #EXIT_NO_DEVICE} without a usable device, {@value #EXIT_BAD_SETTINGS}
     * when a setting needs attention}
     */
    public int exitStatus() {
        if (!hasUsableGpu()) {
            return EXIT_NO_DEVICE;
        }
        return isEverySettingRight() ? EXIT_OK : EXIT_BAD_SETTINGS;
    }
}
