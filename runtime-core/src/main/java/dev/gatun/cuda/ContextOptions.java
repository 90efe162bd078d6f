package dev.gatun.cuda;

import java.time.Duration;
import java.util.Objects;

/**
 * How a {@link CudaContext} is set up ({@link Device#context(ContextOptions)}).
 *
 * @param gateTimeout how long a device-synchronizing call waits for another thread's
 *     global-mode capture before failing with {@link CaptureActiveException}
 * @param devicePool the pool in front of {@link CudaContext#allocate}: its bound on retained
 *     bytes (0 disables it) and call-site profiling
 */
public record ContextOptions(Duration gateTimeout, DevicePoolOptions devicePool) {

    public ContextOptions {
        Objects.requireNonNull(gateTimeout, "gateTimeout");
        Objects.requireNonNull(devicePool, "devicePool");
        if (gateTimeout.isNegative()) {
            throw new IllegalArgumentException("gate timeout must not be negative: " + gateTimeout);
        }
    }

    /** 30 s gate timeout; the pool configured by system properties (default: 2 GiB bound, profiling off). */
    public static ContextOptions defaults() {
        return new ContextOptions(Duration.ofSeconds(30), DevicePoolOptions.fromSystemProperties());
    }

    public ContextOptions withGateTimeout(Duration timeout) {
        return new ContextOptions(timeout, devicePool);
    }

    public ContextOptions withDevicePool(DevicePoolOptions pool) {
        return new ContextOptions(gateTimeout, pool);
    }
}
