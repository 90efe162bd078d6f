package dev.gatun.cuda;

/**
 * A feature Gatun was asked for needs a newer CUDA driver than the one installed: the driver
 * lacks a function (or a launch attribute, a node type) that the feature needs. Only the
 * operation that needs it fails; everything else works on the installed driver. Install a
 * driver that supports at least {@link #requiredVersion()} (CUDA's encoding: 1000 * major + 10 *
 * minor); the minimum driver of every feature is listed in gatun-core's README, "Which driver
 * each feature needs".
 */
public final class DriverTooOldException extends GatunException {
    private static final long serialVersionUID = 1L;

    /** The feature that needs the newer driver. */
    private final String feature;
    /** The driver function (or launch attribute, node type) that is missing. */
    private final String function;
    /** The CUDA version the function needs, in the driver's encoding. */
    private final int requiredVersion;
    /** The CUDA version the installed driver supports, in the driver's encoding. */
    private final int installedVersion;

    /**
     * Reports that {@code feature} needs {@code function}, which is newer than the installed driver.
     *
     * @param feature the feature that needs it, as the README's table names it (e.g. "green contexts")
     * @param function the driver function (or launch attribute, node type) the feature needs
     * @param requiredVersion the CUDA version it needs, in the driver's encoding
     * @param installedVersion the CUDA version the installed driver supports, in the same encoding
     * @param detail more about the failure (where the function was missing, what to do instead), added
     *     to the message in parentheses; empty for none
     */
    public DriverTooOldException(String feature, String function, int requiredVersion, int installedVersion,
            String detail) {
        super(function + " (" + feature + ") needs a CUDA driver for CUDA " + CudaVersion.of(requiredVersion)
                + " or newer; the installed driver supports CUDA " + CudaVersion.of(installedVersion)
                + (detail.isEmpty() ? "" : " (" + detail + ")") + ". Update the NVIDIA driver.");
        this.feature = feature;
        this.function = function;
        this.requiredVersion = requiredVersion;
        this.installedVersion = installedVersion;
    }

    /** {@return the feature that needs the newer driver, e.g. {@code green contexts}} */
    public String feature() {
        return feature;
    }

    /** {@return the driver function (or launch attribute, node type) the feature needs, e.g. {@code cuGraphConditionalHandleCreate}} */
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
