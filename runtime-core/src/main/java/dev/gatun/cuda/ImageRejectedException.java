package dev.gatun.cuda;

import java.util.Optional;

/**
 * The driver rejected a module image ({@code CUDA_ERROR_INVALID_IMAGE},
 * {@code CUDA_ERROR_INVALID_PTX}, {@code CUDA_ERROR_UNSUPPORTED_PTX_VERSION},
 * {@code CUDA_ERROR_NO_BINARY_FOR_GPU}, {@code CUDA_ERROR_INVALID_SOURCE}). It is a
 * {@link CudaException} with the driver's result, so code that catches that keeps working, and
 * it names the image: where it came from, its kind and its SHA-256. With the setting
 * {@value #SAVE_PROPERTY} (a directory; off by default), a copy of each rejected image is kept
 * there, named by its artifact and hash, and {@link #savedCopy()} and the message give its path:
 * inspect a CUBIN with {@code cuobjdump} or {@code nvdisasm}, PTX with {@code ptxas}.
 *
 * <p>What to do: PTX newer than the driver ({@code CUDA_ERROR_UNSUPPORTED_PTX_VERSION}) needs a
 * newer driver, or a CUBIN for the device; an image without code for this device
 * ({@code CUDA_ERROR_NO_BINARY_FOR_GPU}) needs one built for its compute capability.
 */
public final class ImageRejectedException extends CudaException {
    private static final long serialVersionUID = 1L;

    /** The system property naming the directory where rejected images are kept (unset: none are). */
    public static final String SAVE_PROPERTY = "gatun.rejectedImages";

    /** Where the rejected image came from (a file, a resource, a compiler). */
    private final String artifact;
    /** The rejected image's kind. */
    private final ModuleImage.Kind kind;
    /** Hex SHA-256 of the rejected image. */
    private final String sha256;
    /** The kept copy's path, or null when none was kept. */
    private final String savedCopy;

    /**
     * Restates the driver's rejection of {@code image}.
     *
     * @param rejection the driver's refusal, kept as the cause
     * @param image the image it refused
     * @param savedCopy where a copy of the image was kept, or null when none was
     */
    public ImageRejectedException(CudaException rejection, ModuleImage image, String savedCopy) {
        super(rejection.result(), rejection.resultName(), rejection.description(), rejection.operation(),
                rejection.device().orElse(-1), rejection.driverLog(), rejection);
        this.artifact = image.artifact();
        this.kind = image.kind();
        this.sha256 = image.sha256();
        this.savedCopy = savedCopy;
    }

    /** {@return where the rejected image came from (a file, a resource, a compiler)} */
    public String artifact() {
        return artifact;
    }

    /** {@return the rejected image's kind} */
    public ModuleImage.Kind kind() {
        return kind;
    }

    /** {@return hex SHA-256 of the rejected image} */
    public String sha256() {
        return sha256;
    }

    /** {@return the path of the kept copy of the image, when {@value #SAVE_PROPERTY} is set and it was written} */
    public Optional<String> savedCopy() {
        return Optional.ofNullable(savedCopy);
    }

    @Override
    public String getMessage() {
        String image = ". The image: " + kind + " from " + artifact + " (sha256 " + sha256 + ")";
        return super.getMessage() + image + (savedCopy != null
                ? ", kept as " + savedCopy + " (cuobjdump or nvdisasm for a CUBIN, ptxas for PTX)"
                : "; run with -D" + SAVE_PROPERTY + "=DIRECTORY to keep a copy of each rejected image there");
    }
}
