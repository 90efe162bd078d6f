package dev.gatun.cuda.cli;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.Device;
import dev.gatun.cuda.DeviceCapabilities;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.io.PrintStream;
import java.util.Locale;
import java.util.function.Supplier;

/**
 * {@code gatun doctor}: what Gatun finds on this machine. Exit 0 when at least one device is
 * usable, {@link #EXIT_NO_DEVICE} otherwise, always with a diagnosis and never a stack trace.
 */
final class Doctor {

    static final int EXIT_OK = 0;
    static final int EXIT_NO_DEVICE = 3;

    private final Supplier<Cuda> driver;
    private final Supplier<NvrtcLibrary> nvrtc;

    Doctor(Supplier<Cuda> driver, Supplier<NvrtcLibrary> nvrtc) {
        this.driver = driver;
        this.nvrtc = nvrtc;
    }

    static Doctor ofProcess() {
        return new Doctor(Cuda::system, NvrtcLibrary::system);
    }

    int run(PrintStream out) {
        out.println("Gatun doctor");
        int usable = reportDriver(out);
        reportNvrtc(out);
        if (usable == 0) {
            out.println();
            out.println("Result: no usable CUDA device. GPU work will fail with CudaUnavailableException;");
            out.println("Gatun's CPU-side features and tests still work.");
            return EXIT_NO_DEVICE;
        }
        out.println();
        out.println("Result: " + usable + (usable == 1 ? " usable device." : " usable devices."));
        return EXIT_OK;
    }

    private int reportDriver(PrintStream out) {
        Cuda cuda;
        try {
            cuda = driver.get();
        } catch (CudaUnavailableException e) {
            out.println("driver:  NOT FOUND");
            out.println(indent(e.getMessage()));
            return 0;
        } catch (CudaException e) {
            out.println("driver:  loaded, but enumerating devices failed: " + e.getMessage());
            return 0;
        }
        out.println("driver:  " + cuda.driverLibrary());
        out.println("         supports CUDA " + cuda.driverVersion() + " (" + cuda.driverVersion().encoded() + ")");
        out.println("devices: " + cuda.deviceCount());
        int usable = 0;
        for (Device device : cuda.devices()) {
            try {
                DeviceCapabilities caps = device.capabilities();
                out.printf(Locale.ROOT, "  [%d] %s, compute capability %s, %d multiprocessors, %s, PCI %s%n",
                        device.ordinal(), device.name(), caps.computeCapability(), caps.multiprocessorCount(),
                        gib(device.totalMemoryBytes()), device.pciBusId());
                usable++;
            } catch (CudaException e) {
                out.println("  [" + device.ordinal() + "] unusable: " + e.getMessage());
            }
        }
        return usable;
    }

    private void reportNvrtc(PrintStream out) {
        try {
            NvrtcLibrary library = nvrtc.get();
            out.println("nvrtc:   " + library.library());
            out.println("         version " + library.version());
        } catch (CudaUnavailableException e) {
            out.println("nvrtc:   NOT FOUND (needed only to compile CUDA C++ at run time)");
            out.println(indent(e.getMessage()));
        }
    }

    private static String gib(long bytes) {
        return String.format(Locale.ROOT, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
    }

    private static String indent(String text) {
        return "         " + text.replace("\n", "\n         ");
    }
}
