package dev.gatun.cuda;

/**
 * A driver function that Gatun needs is newer than the installed CUDA driver. Install a driver
 * that supports at least {@link #requiredVersion()} (CUDA's encoding: 1000 * major + 10 * minor).
 */
public final class DriverTooOldException extends GatunException {
    private static final long serialVersionUID = 1L;

    /** The driver function (or launch attribute) that is missing. */
    private final String function;
    /** The CUDA version the function needs, in the driver's encoding. */
    private final int requiredVersion;
    /** The CUDA version the installed driver supports, in the driver's encoding. */
    private final int installedVersion;

    /**
     * Reports that {@code function} needs a newer driver than the one installed.
     *
     * @param function the driver function (or launch attribute) Gatun needs
     * @param requiredVersion the CUDA version it needs, in the driver's encoding
     * @param installedVersion the CUDA version the installed driver supports, in the same encoding
     * @param detail more about the failure (where the function was missing, what to do instead), added
     *     to the message in parentheses; empty for none
     */
    public DriverTooOldException(String function, int requiredVersion, int installedVersion, String detail) {
        super(function + " needs a CUDA driver for CUDA " + CudaVersion.of(requiredVersion)
                + " or newer; the installed driver supports CUDA " + CudaVersion.of(installedVersion)
                + (detail.isEmpty() ? "" : " (" + detail + ")") + ". Update the NVIDIA driver.");
        this.function = function;
        this.requiredVersion = requiredVersion;
        this.installedVersion = installedVersion;
    }

    /** {@return the driver function (or launch attribute) Gatun needs, e.g. {@code cuGraphConditionalHandleCreate}} */
    public String function() {
        return function;
    }

    /** {@return the CUDA version the function needs, e.g. 12030 for 12.3} */
    public int requiredVersion() {
        return requiredVersion;
    }

    /** {@return the CUDA version the installed driver supports, in the same encoding} */
    public int installedVersion() {
        return installedVersion;
    }
}
