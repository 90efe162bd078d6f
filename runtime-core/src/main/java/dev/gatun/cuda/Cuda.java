package dev.gatun.cuda;

import dev.gatun.cuda.internal.driver.DeviceCalls;
import dev.gatun.cuda.internal.driver.Driver;
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

    /** Whether a CUDA driver could be loaded and initialized. Never throws. */
    public static boolean isAvailable() {
        return Driver.systemAvailable();
    }

    /**
     * The process's CUDA driver.
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

    /** The CUDA version the driver supports ({@code cuDriverGetVersion}), e.g. 13.0. */
    public CudaVersion driverVersion() {
        return driver.version();
    }

    /** Where the driver library was loaded from, and how it was found. */
    public String driverLibrary() {
        return driver.library();
    }

    /** How many devices the driver reports. */
    public int deviceCount() {
        return devices.size();
    }

    /**
     * One device by ordinal.
     *
     * @throws IllegalArgumentException when there is no such device
     */
    public Device device(int ordinal) {
        if (ordinal < 0 || ordinal >= devices.size()) {
            throw new IllegalArgumentException("no CUDA device " + ordinal + ": the driver reports " + devices.size()
                    + (devices.size() == 1 ? " device (ordinal 0)" : " devices (ordinals 0.." + (devices.size() - 1) + ")"));
        }
        return devices.get(ordinal);
    }

    /** Every device, by ordinal. */
    public List<Device> devices() {
        return devices;
    }

    Driver driver() {
        return driver;
    }
}
