package dev.gatun.cuda;

import dev.gatun.cuda.internal.settings.Settings;

import java.time.Duration;
import java.util.Objects;

/**
 * How a {@link CudaContext} is set up ({@link Device#context(ContextOptions)}).
 *
 * @param gateTimeout how long a device-synchronizing call waits for another thread's
 *     global-mode capture before failing with {@link CaptureActiveException}
 * @param devicePool the pool in front of {@link CudaContext#allocate}: its bound on retained
 *     bytes (0 disables it) and call-site profiling
 * @param leakTracking whether every owner made from the context records where it was created,
 *     so that an owner that is never closed is reported with its allocation site (costs a stack
 *     trace per owner, and turns off the recycling of device memory: for tests and debugging).
 *     Off, owners are still watched for leaks, but device buffers on the allocation hot paths
 *     only one in {@value dev.gatun.cuda.internal.memory.DeviceMemory#LEAK_SAMPLING} (see
 *     runtime-core/README.md, "Device memory: one kind per class")
 */
public record ContextOptions(Duration gateTimeout, DevicePoolOptions devicePool, boolean leakTracking) {

    public ContextOptions {
        Objects.requireNonNull(gateTimeout, "gateTimeout");
        Objects.requireNonNull(devicePool, "devicePool");
        if (gateTimeout.isNegative()) {
            throw new IllegalArgumentException("gate timeout must not be negative: " + gateTimeout);
        }
    }

    /** System property that switches leak tracking on for contexts opened with {@link #defaults()}: true or false. */
    public static final String LEAK_TRACKING_PROPERTY = "gatun.leakTracking";

    /**
     * 30 s gate timeout; the pool configured by system properties (default: 2 GiB bound,
     * profiling off); leak tracking as {@value #LEAK_TRACKING_PROPERTY} says (default off).
     *
     * @throws IllegalArgumentException when one of these system properties is set to something it
     *     cannot mean (a switch takes true or false only)
     */
    public static ContextOptions defaults() {
        return new ContextOptions(Duration.ofSeconds(30), DevicePoolOptions.fromSystemProperties(),
                Settings.flag("system property " + LEAK_TRACKING_PROPERTY, System.getProperty(LEAK_TRACKING_PROPERTY),
                        false));
    }

    public ContextOptions withGateTimeout(Duration timeout) {
        return new ContextOptions(timeout, devicePool, leakTracking);
    }

    public ContextOptions withDevicePool(DevicePoolOptions pool) {
        return new ContextOptions(gateTimeout, pool, leakTracking);
    }

    public ContextOptions withLeakTracking(boolean on) {
        return new ContextOptions(gateTimeout, devicePool, on);
    }
}
