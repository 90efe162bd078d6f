package dev.gatun.cuda;

import dev.gatun.cuda.internal.driver.DeviceCalls;
import dev.gatun.cuda.internal.driver.Driver;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;

/**
 * Entry point: the process's CUDA driver and its devices.
 *
 * <pre>{@code
 * if (Cuda.isAvailable()) {
 *     Device gpu = Cuda.system().device(0);
 *     String what = gpu.name() + ", compute capability " + gpu.capabilities().computeCapability();
 * }
 * }</pre>
 *
 * <p>The driver is found and initialized ({@code cuInit}) once, on first use (once per class
 * loader that loads Gatun: each copy opens the same driver); see the README for where it is
 * looked for and how to point Gatun at it. Without a usable driver,
 * {@link #isAvailable()} is false and {@link #system()} throws {@link CudaUnavailableException}
 * with every path tried, on every call.
 */
public final class Cuda {

    private static volatile Cuda system;

    private final Driver driver;
    private final List<Device> devices;

    Cuda(Driver driver) {
        this.driver = Objects.requireNonNull(driver);
        int count = DeviceCalls.of(driver, -1).count();
        Device[] all = new Device[count];
        for (int i = 0; i < count; i++) {
            all[i] = new Device(this, i);
        }
        this.devices = List.of(all);
    }

    /** {@return whether a CUDA driver could be loaded and initialized} Never throws. */
    public static boolean isAvailable() {
        return Driver.systemAvailable();
    }

    /**
     * {@return the process's CUDA driver}
     *
     * @throws CudaUnavailableException when no driver could be loaded or initialized
     */
    public static Cuda system() {
        Cuda s = system;
        if (s == null) {
            synchronized (Cuda.class) {
                s = system;
                if (s == null) {
                    s = new Cuda(Driver.system());
                    system = s;
                }
            }
        }
        return s;
    }

    /** {@return the CUDA version the driver supports ({@code cuDriverGetVersion}), e.g. 13.0} */
    public CudaVersion driverVersion() {
        return driver.version();
    }

    /** {@return where the driver library was loaded from, and how it was found} */
    public String driverLibrary() {
        return driver.library();
    }

    /** {@return how many devices the driver reports} */
    public int deviceCount() {
        return devices.size();
    }

    /**
     * One device by ordinal.
     *
     * @param ordinal the device's ordinal, from 0 to {@link #deviceCount()} - 1
     * @return the device
     * @throws IllegalArgumentException when there is no such device
     */
    public Device device(int ordinal) {
        if (ordinal < 0 || ordinal >= devices.size()) {
            throw new IllegalArgumentException("no CUDA device " + ordinal + ": the driver reports " + devices.size()
                    + (devices.size() == 1 ? " device (ordinal 0)" : " devices (ordinals 0.." + (devices.size() - 1) + ")"));
        }
        return devices.get(ordinal);
    }

    /**
     * Gatun's context for a {@code CUcontext} another library hands over: accepted only when it
     * is a device's primary context (the one the CUDA runtime API, and so most libraries, use),
     * which Gatun shares; that device's {@link Device#context()} is returned, opened with default
     * options if it is not open yet. Gatun never destroys or releases the handle.
     *
     * <p>A context the other library created itself ({@code cuCtxCreate}) is refused: Gatun's
     * owners live in primary contexts, and a context Gatun did not create could be destroyed
     * under them. Borrow that library's streams and memory only if they live in the primary
     * context, or have it use the primary context ({@code cuDevicePrimaryCtxRetain}).
     *
     * @param foreignContext a {@code CUcontext} handle from the other library
     * @return the device's Gatun context, the same object {@link Device#context()} gives
     * @throws IllegalArgumentException when {@code foreignContext} is NULL or not a primary context
     * @throws CudaException when the driver rejects the handle
     */
    public CudaContext contextOf(MemorySegment foreignContext) {
        Objects.requireNonNull(foreignContext, "foreignContext");
        if (foreignContext.address() == 0) {
            throw new IllegalArgumentException("the NULL context is no context; pass the library's CUcontext");
        }
        int cuDevice = DeviceCalls.of(driver, -1).deviceOf(foreignContext);
        Device device = devices.stream().filter(d -> d.handle() == cuDevice).findFirst().orElseThrow(
                () -> new IllegalStateException("the driver reports device handle " + cuDevice + ", which is none of "
                        + "its " + devices.size() + " devices"));
        if (device.primary().address() != foreignContext.address()) {
            throw new IllegalArgumentException("context 0x" + Long.toHexString(foreignContext.address()) + " is not "
                    + "device " + device.ordinal() + "'s primary context (0x" + Long.toHexString(device.primary().address())
                    + "): Gatun works in primary contexts only; have the library use the primary context "
                    + "(cuDevicePrimaryCtxRetain, as the CUDA runtime does), then borrow its streams and memory");
        }
        return device.context();
    }

    /** {@return every device, by ordinal} */
    public List<Device> devices() {
        return devices;
    }

    Driver driver() {
        return driver;
    }
}
