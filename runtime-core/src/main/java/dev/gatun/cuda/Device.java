package dev.gatun.cuda;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.driver.DeviceCalls;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * One CUDA device. Cheap to hold; queries go to the driver each time except
 * {@link #capabilities()}, which is read once.
 */
public final class Device {

    private final Cuda cuda;
    private final int ordinal;
    private final DeviceCalls calls;
    private final int handle;
    private volatile DeviceCapabilities capabilities;
    private volatile StreamMemOpSupport memOpSupport;
    /** The primary context, retained once and never released (see CudaContext). */
    private MemorySegment primary;
    /** Whether GPU coredumps may be on for the primary context because Gatun turned them on, or tried to; guarded by this object's lock, under which contexts open. */
    private boolean coredumpsOn;
    private CudaContext context;

    Device(Cuda cuda, int ordinal) {
        this.cuda = cuda;
        this.ordinal = ordinal;
        this.calls = DeviceCalls.of(cuda.driver(), ordinal);
        this.handle = calls.get(ordinal);
    }

    /** {@return the device's ordinal, as {@link Cuda#device(int)} takes it} */
    public int ordinal() {
        return ordinal;
    }

    /** The driver's handle ({@code CUdevice}). */
    int handle() {
        return handle;
    }

    Cuda cuda() {
        return cuda;
    }

    /** {@return the product name, e.g. {@code NVIDIA H200}} */
    public String name() {
        return calls.name(handle);
    }

    /** {@return the PCI bus id in the form {@code 0000:00:06.0} (domain:bus:device.function)} */
    public String pciBusId() {
        return calls.pciBusId(handle);
    }

    /** {@return total device memory in bytes ({@code cuDeviceTotalMem})} */
    public long totalMemoryBytes() {
        return calls.totalMemory(handle);
    }

    /**
     * {@return one attribute's value ({@code cuDeviceGetAttribute})}
     *
     * @param attribute which attribute
     * @throws CudaException when the driver rejects the attribute (one newer than the installed driver)
     */
    public int attribute(DeviceAttribute attribute) {
        return calls.attribute(handle, attribute.code);
    }

    /** {@return the launch-relevant limits, with conservative fallbacks (see {@link DeviceCapabilities})} */
    public DeviceCapabilities capabilities() {
        DeviceCapabilities c = capabilities;
        if (c == null) {
            long total;
            try {
                total = totalMemoryBytes();
            } catch (CudaException e) {
                total = 0; // documented fallback: unknown
            }
            c = DeviceCapabilities.fromReported(this::attributeOrNegative, total);
            capabilities = c;
        }
        return c;
    }

    /**
     * {@return which stream memory operations this device supports} Read once, then kept: a
     * refused 64-bit, NOR or FLUSH operation is turned down before the driver sees it.
     */
    public StreamMemOpSupport streamMemOpSupport() {
        StreamMemOpSupport s = memOpSupport;
        if (s == null) {
            s = new StreamMemOpSupport(reports(DeviceAttribute.CAN_USE_64_BIT_STREAM_MEM_OPS),
                    reports(DeviceAttribute.CAN_USE_STREAM_WAIT_VALUE_NOR), reports(DeviceAttribute.CAN_FLUSH_REMOTE_WRITES));
            memOpSupport = s;
        }
        return s;
    }

    /** Whether a yes/no attribute is reported as yes; one the driver fails to report counts as no. */
    private boolean reports(DeviceAttribute attribute) {
        try {
            return attribute(attribute) != 0;
        } catch (CudaException e) {
            return false;
        }
    }

    private int attributeOrNegative(DeviceAttribute attribute) {
        try {
            return attribute(attribute);
        } catch (CudaException e) {
            return -1; // documented fallback: the record substitutes a conservative value
        }
    }

    /**
     * Whether this device can access {@code peer}'s memory directly ({@code cuDeviceCanAccessPeer}).
     *
     * @param peer the other device
     * @return whether the driver reports direct access from this device to {@code peer}
     */
    public boolean canAccessPeer(Device peer) {
        checkSameDriver(peer);
        if (peer == this) {
            return false;
        }
        return calls.canAccessPeer(handle, peer.handle);
    }

    /**
     * The link from this device to {@code peer}: access, native atomics, performance rank.
     *
     * @param peer the other device
     * @return the link's properties, as the driver reports them
     */
    public PeerLink linkTo(Device peer) {
        checkSameDriver(peer);
        if (peer == this) {
            throw new IllegalArgumentException("a device has no peer link to itself");
        }
        return new PeerLink(ordinal, peer.ordinal,
                p2p(peer, CudaDriver.CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED()) != 0,
                p2p(peer, CudaDriver.CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED()) != 0,
                p2p(peer, CudaDriver.CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK()));
    }

    private int p2p(Device peer, int attribute) {
        return calls.peerAttribute(attribute, handle, peer.handle);
    }

    private void checkSameDriver(Device peer) {
        if (peer.cuda != cuda) {
            throw new IllegalArgumentException(peer + " belongs to another Cuda instance; use devices of one Cuda "
                    + "(Cuda.system()) together");
        }
    }

    /**
     * {@return Gatun's context for this device (its primary context), opened on first use with
     * {@link ContextOptions#defaults()}} The same object is returned until it is closed; after
     * that, a new one is opened.
     */
    public synchronized CudaContext context() {
        return context == null ? context(ContextOptions.defaults()) : context;
    }

    /**
     * Gatun's context for this device, opened with {@code options} if it is not open yet.
     *
     * @param options the options to open the context with, when it is not open yet
     * @return this device's context
     * @throws IllegalStateException when it is already open with different options (close it first)
     */
    public synchronized CudaContext context(ContextOptions options) {
        if (context != null) {
            if (!context.options().equals(options)) {
                throw new IllegalStateException("the context of device " + ordinal + " is already open with "
                        + context.options() + "; close it before opening it with " + options);
            }
            return context;
        }
        context = new CudaContext(this, primary(), null, options);
        return context;
    }

    /**
     * Splits this device's SMs into {@code groups} green contexts of at least {@code minCount} SMs
     * each, and one of the SMs left over ({@code partitionSms(minCount, groups, ContextOptions.defaults())}).
     *
     * @param minCount the fewest SMs a group may have
     * @param groups how many groups to make
     * @return the partition, to close when done
     */
    public SmPartition partitionSms(int minCount, int groups) {
        return partitionSms(minCount, groups, ContextOptions.defaults());
    }

    /**
     * Splits this device's SMs into {@code groups} green contexts ({@code cuDeviceGetDevResource},
     * {@code cuDevSmResourceSplitByCount}, {@code cuDevResourceGenerateDesc}, {@code cuGreenCtxCreate},
     * {@code cuCtxFromGreenCtx}), so that work on one cannot take SMs from another. The driver
     * rounds {@code minCount} up to its granularity (8 SMs on Hopper); each group's count is
     * {@link CudaContext#smCount()}. The SMs left over form {@link SmPartition#remainder()}. The
     * primary context is retained first, as the driver advises, and the green contexts are
     * independent of {@link #context()}: either can be closed first.
     *
     * @param minCount the fewest SMs a group may have
     * @param groups how many groups to make
     * @param options what each group's context is opened with
     * @return the partition, to close when done
     * @throws IllegalArgumentException when a count is not positive, or the device's SMs make fewer
     *     than {@code groups} groups of {@code minCount} (nothing is made then)
     * @throws DriverTooOldException on a driver older than CUDA 12.5 (green contexts came with 12.4,
     *     the streams made for them with 12.5)
     * @throws CudaException when the driver refuses a step (nothing is left made then)
     */
    public SmPartition partitionSms(int minCount, int groups, ContextOptions options) {
        Objects.requireNonNull(options, "options");
        if (minCount <= 0 || groups <= 0) {
            throw new IllegalArgumentException("a partition needs at least one group of at least one SM, not " + groups
                    + " groups of " + minCount);
        }
        primary();
        return SmPartition.split(this, minCount, groups, options);
    }

    /**
     * Sets the primary context's GPU coredumps as {@code dumps} says, for a context of this device
     * that opens (under this object's lock). The setting outlives the context, so dumps an earlier
     * context turned on are turned off again when this one wants none; a device whose dumps Gatun
     * never turned on gets no driver call.
     */
    void applyCoredumps(ContextState context, GpuCoredumps dumps) {
        if (dumps.enabled()) {
            context.calls().coredumps().requireSupport();
            coredumpsOn = true; // before turnOn: one that fails halfway may have turned them on
            context.calls().coredumps().turnOn(dumps.file(), dumps.lightweight());
        } else if (coredumpsOn) {
            context.calls().coredumps().turnOff();
            coredumpsOn = false;
        }
    }

    /** The primary context, retained on first use and never released (see CudaContext). */
    synchronized MemorySegment primary() {
        if (primary == null) {
            primary = calls.retainPrimaryContext(handle);
        }
        return primary;
    }

    synchronized void contextClosed(CudaContext closed) {
        if (context == closed) {
            context = null;
        }
    }

    @Override
    public String toString() {
        return "Device[" + ordinal + "]";
    }
}
