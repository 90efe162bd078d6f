package dev.gatun.cuda;

import dev.gatun.cuda.internal.settings.Settings;

/**
 * Settings of a context's device memory pool: freed device blocks are kept, per size class,
 * for the next allocation of that class instead of going back to the driver.
 *
 * <p>{@link #fromSystemProperties()} reads {@value #MAX_RETAINED_BYTES_PROPERTY} (bytes; 0 disables
 * pooling) and {@value #PROFILE_PROPERTY} ({@code true} or {@code false}).
 *
 * @param maxRetainedBytes the most device bytes the pool keeps for reuse; 0 disables pooling,
 *     so every allocation and free goes to the driver (what to set when bisecting a suspected
 *     reuse bug)
 * @param profileCallSites whether acquisitions are attributed to their call sites from the
 *     start (the first frame outside Gatun); it costs a stack walk per allocation
 * @param hardCapBytes the most device bytes the pool holds from the driver, handed out and
 *     retained together; a request that would pass it climbs the out-of-memory ladder and then
 *     fails with {@link OutOfDeviceMemoryException}. {@link #NO_CAP} (the default) for none
 * @param softLimitBytes above this many bytes held, the pool frees retained blocks (largest
 *     first) down to it once it is idle: no allocation from it between two safe points (a block
 *     coming back from retirement, {@link CudaContext#reap()}, {@link CudaContext#synchronize()}).
 *     When set, at most {@code hardCapBytes}; {@link #NO_CAP} (the default) for none
 */
public record DevicePoolOptions(long maxRetainedBytes, boolean profileCallSites, long hardCapBytes,
        long softLimitBytes) {

    /** No hard cap, or no soft limit. */
    public static final long NO_CAP = Long.MAX_VALUE;

    /**
     * The default bound, 2 GiB: sized for the transient scratch of a request, not for a model,
     * so pooled memory never takes a meaningful share of the device away from weights.
     */
    public static final long DEFAULT_MAX_RETAINED_BYTES = 2L << 30;

    /** System property for the bound, in bytes. */
    public static final String MAX_RETAINED_BYTES_PROPERTY = "gatun.pool.bytes";

    /** System property that switches call-site profiling on. */
    public static final String PROFILE_PROPERTY = "gatun.pool.profile";

    /**
     * Checks the components.
     *
     * @throws IllegalArgumentException when {@code maxRetainedBytes} is negative, a cap or limit is not
     *     positive, or the soft limit is above the hard cap
     */
    public DevicePoolOptions {
        if (maxRetainedBytes < 0) {
            throw new IllegalArgumentException("maxRetainedBytes is " + maxRetainedBytes
                    + "; give a number of bytes >= 0 (0 disables pooling)");
        }
        if (hardCapBytes <= 0 || softLimitBytes <= 0 || softLimitBytes != NO_CAP && softLimitBytes > hardCapBytes) {
            throw new IllegalArgumentException("hardCapBytes is " + hardCapBytes + " and softLimitBytes "
                    + softLimitBytes + "; give positive byte counts with a soft limit at most the cap "
                    + "(DevicePoolOptions.NO_CAP for none)");
        }
    }

    /**
     * A pool without a hard cap or soft limit.
     *
     * @param maxRetainedBytes as the record component of that name
     * @param profileCallSites as the record component of that name
     */
    public DevicePoolOptions(long maxRetainedBytes, boolean profileCallSites) {
        this(maxRetainedBytes, profileCallSites, NO_CAP, NO_CAP);
    }

    /**
     * {@return these options with a hard cap of {@code bytes} ({@link #NO_CAP}: none)}
     *
     * @param bytes the new {@link #hardCapBytes()}
     */
    public DevicePoolOptions withHardCapBytes(long bytes) {
        return new DevicePoolOptions(maxRetainedBytes, profileCallSites, bytes, softLimitBytes);
    }

    /**
     * {@return these options with a soft limit of {@code bytes} ({@link #NO_CAP}: none)}
     *
     * @param bytes the new {@link #softLimitBytes()}
     */
    public DevicePoolOptions withSoftLimitBytes(long bytes) {
        return new DevicePoolOptions(maxRetainedBytes, profileCallSites, hardCapBytes, bytes);
    }

    /**
     * {@return the options the system properties ask for; the default bound and no profiling where unset}
     *
     * @throws IllegalArgumentException when a property is set to something it cannot mean
     */
    public static DevicePoolOptions fromSystemProperties() {
        return parse(System.getProperty(MAX_RETAINED_BYTES_PROPERTY), System.getProperty(PROFILE_PROPERTY));
    }

    /** Reads the two property values; null means unset. */
    static DevicePoolOptions parse(String bound, String profile) {
        return new DevicePoolOptions(Settings.bytes("system property " + MAX_RETAINED_BYTES_PROPERTY, bound, DEFAULT_MAX_RETAINED_BYTES, 0,
                        Long.MAX_VALUE, ", e.g. " + DEFAULT_MAX_RETAINED_BYTES + " (2 GiB, the default), or to 0 to disable pooling"),
                Settings.flag("system property " + PROFILE_PROPERTY, profile, false));
    }
}
