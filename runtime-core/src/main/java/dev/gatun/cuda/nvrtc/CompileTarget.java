package dev.gatun.cuda.nvrtc;

import dev.gatun.cuda.DeviceCapabilities;
import java.util.Objects;

/**
 * What NVRTC produces: PTX for a virtual architecture ({@code compute_XY}), which the driver
 * JIT-compiles for the device at load time, or a CUBIN for one real architecture
 * ({@code sm_XY}), which loads without JIT, but only on devices of the same major compute
 * capability and an equal or higher minor one.
 *
 * @param kind PTX or CUBIN
 * @param major compute capability, major (9 for Hopper, 10 and 12 for Blackwell)
 * @param minor compute capability, minor (0 to 9)
 */
public record CompileTarget(Kind kind, int major, int minor) {

    /** The form of a compiled image. */
    public enum Kind {
        /** PTX text for a virtual architecture. */
        PTX,
        /** A CUBIN (ELF) for a real architecture. */
        CUBIN
    }

    /** Checks the components: a kind, and a compute capability from 1.0 to 99.9. */
    public CompileTarget {
        Objects.requireNonNull(kind, "kind");
        if (major < 1 || major > 99 || minor < 0 || minor > 9) {
            throw new IllegalArgumentException("compute capability " + major + "." + minor
                    + " is not valid: major must be 1 to 99 and minor 0 to 9 (e.g. 9.0 for an H100)");
        }
    }

    /**
     * PTX for {@code compute_<major><minor>}.
     *
     * @param major the compute capability's major number
     * @param minor its minor number
     * @return the target
     */
    public static CompileTarget ptx(int major, int minor) {
        return new CompileTarget(Kind.PTX, major, minor);
    }

    /**
     * A CUBIN for {@code sm_<major><minor>}.
     *
     * @param major the compute capability's major number
     * @param minor its minor number
     * @return the target
     */
    public static CompileTarget cubin(int major, int minor) {
        return new CompileTarget(Kind.CUBIN, major, minor);
    }

    /**
     * PTX for this device's compute capability.
     *
     * @param device the device's capabilities
     * @return the target
     */
    public static CompileTarget ptx(DeviceCapabilities device) {
        return ptx(device.computeMajor(), device.computeMinor());
    }

    /**
     * A CUBIN for this device's compute capability.
     *
     * @param device the device's capabilities
     * @return the target
     */
    public static CompileTarget cubin(DeviceCapabilities device) {
        return cubin(device.computeMajor(), device.computeMinor());
    }

    /**
     * {@code compute_90} for PTX, {@code sm_90} for CUBIN.
     *
     * @return the architecture as NVRTC names it
     */
    public String architecture() {
        return (kind == Kind.PTX ? "compute_" : "sm_") + major + minor;
    }

    /** {@return the NVRTC option that selects this target, e.g. {@code --gpu-architecture=sm_90}} */
    public String gpuArchOption() {
        return "--gpu-architecture=" + architecture();
    }
}
