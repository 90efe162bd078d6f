package dev.gatun.cuda;

/**
 * A module image that is not a well-formed CUBIN, fatbin or PTX text: truncated, corrupt, or
 * not a GPU image at all. Thrown when the {@link ModuleImage} is made, so such bytes never
 * reach the driver, which trusts the offsets and sizes inside an image and can crash the
 * process on a bad one. The message names what is wrong and where.
 */
public final class InvalidModuleImageException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    private final String artifact;

    public InvalidModuleImageException(String artifact, String message) {
        super(message);
        this.artifact = artifact;
    }

    /** Where the rejected image came from (a file, a resource, a compiler). */
    public String artifact() {
        return artifact;
    }
}
