package dev.gatun.cuda;

/**
 * A driver function that Gatun needs is newer than the installed CUDA driver. Install a driver
 * that supports at least {@link #requiredVersion()} (CUDA's encoding: 1000 * major + 10 * minor).
 */
public final class DriverTooOldException extends GatunException {
    private static final long serialVersionUID = 1L;

    private final String function;
    private final int requiredVersion;
    private final int installedVersion;

    public DriverTooOldException(String function, int requiredVersion, int installedVersion, String detail) {
        super(function + " needs a CUDA driver for CUDA " + CudaVersion.of(requiredVersion)
                + " or newer; the installed driver supports CUDA " + CudaVersion.of(installedVersion)
                + (detail.isEmpty() ? "" : " (" + detail + ")") + ". Update the NVIDIA driver.");
        this.function = function;
        this.requiredVersion = requiredVersion;
        this.installedVersion = installedVersion;
    }

    public String function() {
        return function;
    }

    public int requiredVersion() {
        return requiredVersion;
    }

    public int installedVersion() {
        return installedVersion;
    }
}
