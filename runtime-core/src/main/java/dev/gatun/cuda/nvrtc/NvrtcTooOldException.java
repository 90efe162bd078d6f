package dev.gatun.cuda.nvrtc;

import dev.gatun.cuda.CudaVersion;
import dev.gatun.cuda.GatunException;

/**
 * A compilation needs an NVRTC function that the loaded NVRTC library does not have: one newer
 * than it, or one its toolkit left out. Only the compilation that needs it fails. Install a
 * newer CUDA toolkit's NVRTC (at least {@link #requiredVersion()}, in CUDA's encoding: 1000 *
 * major + 10 * minor), or point Gatun at one with {@code -Dgatun.nvrtc=/path/to/libnvrtc.so.13}
 * or {@code GATUN_NVRTC}.
 */
public final class NvrtcTooOldException extends GatunException {
    private static final long serialVersionUID = 1L;

    /** The NVRTC function that is missing. */
    private final String function;
    /** The NVRTC version that introduced it, in CUDA's encoding. */
    private final int requiredVersion;
    /** The loaded NVRTC's version, in the same encoding. */
    private final int installedVersion;

    /**
     * Reports that {@code function} is missing from the loaded NVRTC.
     *
     * @param function the NVRTC function a compilation needs
     * @param requiredVersion the NVRTC version that introduced it, in CUDA's encoding
     * @param installedVersion the loaded NVRTC's version, in the same encoding
     * @param library where the loaded NVRTC came from
     */
    public NvrtcTooOldException(String function, int requiredVersion, int installedVersion, String library) {
        super(function + " needs NVRTC " + CudaVersion.of(requiredVersion) + " or newer; the NVRTC at " + library
                + " is " + CudaVersion.of(installedVersion) + (installedVersion >= requiredVersion
                        ? " and does not export it" : "")
                + ". Install a newer CUDA toolkit's NVRTC, or point Gatun at one with "
                + "-Dgatun.nvrtc=/path/to/libnvrtc.so.13 or GATUN_NVRTC.");
        this.function = function;
        this.requiredVersion = requiredVersion;
        this.installedVersion = installedVersion;
    }

    /** {@return the NVRTC function a compilation needs, e.g. {@code nvrtcGetCUBIN}} */
    public String function() {
        return function;
    }

    /** {@return the NVRTC version that introduced it, e.g. 11010 for 11.1} */
    public int requiredVersion() {
        return requiredVersion;
    }

    /** {@return the loaded NVRTC's version, in the same encoding} */
    public int installedVersion() {
        return installedVersion;
    }
}
