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
 * @param outOfMemoryLadder whether an allocation that runs out of memory climbs the out-of-memory
 *     ladder (free what retirement can, trim the pools, synchronize, each followed by a retry)
 *     before failing with an {@link OutOfDeviceMemoryException} that reports where the memory is
 *     (on by default). Off, it fails at once with the driver's {@link CudaException}, as before
 *     the ladder; only Gatun's device pool still trims itself and tries once more
 * @param coredumps whether a kernel fault in the context writes a GPU coredump, where, and how
 *     much of the device it holds (off by default; see {@link GpuCoredumps})
 */
public record ContextOptions(Duration gateTimeout, DevicePoolOptions devicePool, boolean leakTracking,
        boolean outOfMemoryLadder, GpuCoredumps coredumps) {

    /**
     * Checks the components.
     *
     * @throws NullPointerException when {@code gateTimeout}, {@code devicePool} or {@code coredumps} is null
     * @throws IllegalArgumentException when {@code gateTimeout} is negative
     */
    public ContextOptions {
        Objects.requireNonNull(gateTimeout, "gateTimeout");
        Objects.requireNonNull(devicePool, "devicePool");
        Objects.requireNonNull(coredumps, "coredumps");
        if (gateTimeout.isNegative()) {
            throw new IllegalArgumentException("gate timeout must not be negative: " + gateTimeout);
        }
    }

    /**
     * A context without the out-of-memory ladder setting given: the ladder is on.
     *
     * @param gateTimeout as the record component of that name
     * @param devicePool as the record component of that name
     * @param leakTracking as the record component of that name
     */
    public ContextOptions(Duration gateTimeout, DevicePoolOptions devicePool, boolean leakTracking) {
        this(gateTimeout, devicePool, leakTracking, true);
    }

    /**
     * A context without the coredump setting given: GPU coredumps are off.
     *
     * @param gateTimeout as the record component of that name
     * @param devicePool as the record component of that name
     * @param leakTracking as the record component of that name
     * @param outOfMemoryLadder as the record component of that name
     */
    public ContextOptions(Duration gateTimeout, DevicePoolOptions devicePool, boolean leakTracking,
            boolean outOfMemoryLadder) {
        this(gateTimeout, devicePool, leakTracking, outOfMemoryLadder, GpuCoredumps.off());
    }

    /** System property that switches leak tracking on for contexts opened with {@link #defaults()}: true or false. */
    public static final String LEAK_TRACKING_PROPERTY = "gatun.leakTracking";

    /** System property that switches the out-of-memory ladder for contexts opened with {@link #defaults()}: true or false. */
    public static final String OUT_OF_MEMORY_LADDER_PROPERTY = "gatun.oomLadder";

    /**
     * {@return the options a context gets unless told otherwise: 30 s gate timeout; the pool
     * configured by system properties (default: 2 GiB bound, profiling off); leak tracking as
     * {@value #LEAK_TRACKING_PROPERTY} says (default off); the out-of-memory ladder as
     * {@value #OUT_OF_MEMORY_LADDER_PROPERTY} says (default on); GPU coredumps as
     * {@link GpuCoredumps#fromSystemProperties()} says (default off)}
     *
     * @throws IllegalArgumentException when one of these system properties is set to something it
     *     cannot mean (a switch takes true or false only)
     */
    public static ContextOptions defaults() {
        return new ContextOptions(Duration.ofSeconds(30), DevicePoolOptions.fromSystemProperties(),
                Settings.flag("system property " + LEAK_TRACKING_PROPERTY, System.getProperty(LEAK_TRACKING_PROPERTY),
                        false),
                Settings.flag("system property " + OUT_OF_MEMORY_LADDER_PROPERTY,
                        System.getProperty(OUT_OF_MEMORY_LADDER_PROPERTY), true),
                GpuCoredumps.fromSystemProperties());
    }

    /**
     * {@return these options with another gate timeout}
     *
     * @param timeout the new {@link #gateTimeout()}; not negative
     */
    public ContextOptions withGateTimeout(Duration timeout) {
        return new ContextOptions(timeout, devicePool, leakTracking, outOfMemoryLadder, coredumps);
    }

    /**
     * {@return these options with another device pool setting}
     *
     * @param pool the new {@link #devicePool()}
     */
    public ContextOptions withDevicePool(DevicePoolOptions pool) {
        return new ContextOptions(gateTimeout, pool, leakTracking, outOfMemoryLadder, coredumps);
    }

    /**
     * {@return these options with leak tracking on or off}
     *
     * @param on the new {@link #leakTracking()}
     */
    public ContextOptions withLeakTracking(boolean on) {
        return new ContextOptions(gateTimeout, devicePool, on, outOfMemoryLadder, coredumps);
    }

    /**
     * {@return these options with the out-of-memory ladder on or off (see {@link #outOfMemoryLadder()})}
     *
     * @param on whether allocations climb the ladder before failing
     */
    public ContextOptions withOutOfMemoryLadder(boolean on) {
        return new ContextOptions(gateTimeout, devicePool, leakTracking, on, coredumps);
    }

    /**
     * {@return these options with other GPU coredump settings}
     *
     * @param dumps the new {@link #coredumps()}
     */
    public ContextOptions withCoredumps(GpuCoredumps dumps) {
        return new ContextOptions(gateTimeout, devicePool, leakTracking, outOfMemoryLadder, dumps);
    }
}
