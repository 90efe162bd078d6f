package dev.gatun.cuda;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Arrays;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

/**
 * The driver rejected a module or library image ({@code CUDA_ERROR_INVALID_IMAGE},
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

    /** The results by which the driver rejects an image itself. */
    private static final Set<Integer> REJECTIONS = Set.of(CudaDriver.CUDA_ERROR_INVALID_IMAGE(),
            CudaDriver.CUDA_ERROR_INVALID_PTX(), CudaDriver.CUDA_ERROR_UNSUPPORTED_PTX_VERSION(),
            CudaDriver.CUDA_ERROR_NO_BINARY_FOR_GPU(), CudaDriver.CUDA_ERROR_INVALID_SOURCE());

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

    /**
     * The failure of a load of {@code image} (a module's or a library's) as the caller reports
     * it: an {@code ImageRejectedException} when the driver rejected the image itself (keeping a
     * copy where {@link #SAVE_PROPERTY} says), else {@code failure} unchanged.
     */
    static CudaException restate(CudaException failure, ModuleImage image) {
        return REJECTIONS.contains(failure.result()) ? new ImageRejectedException(failure, image, keep(image, failure))
                : failure;
    }

    /**
     * Keeps a copy of a rejected image in the directory {@link #SAVE_PROPERTY}
     * names, as {@code <artifact>-<12 hex digits of its SHA-256>.<kind>}; returns its path, or null
     * when the setting is unset or the copy could not be written (that failure is added to
     * {@code rejection}, whose report it must not replace).
     */
    private static String keep(ModuleImage image, CudaException rejection) {
        String directory = System.getProperty(SAVE_PROPERTY);
        if (directory == null || directory.isBlank()) {
            return null;
        }
        String base = image.artifact().replaceAll(".*[/\\\\]", "").replaceAll("[^A-Za-z0-9._-]", "_");
        try {
            Path dir = Files.createDirectories(Path.of(directory.strip()));
            Path file = dir.resolve(base + "-" + image.sha256().substring(0, 12) + "."
                    + image.kind().name().toLowerCase(Locale.ROOT));
            if (!Files.exists(file)) {
                // The image as given: PTX without the NUL that loading appends.
                Path temp = Files.createTempFile(dir, base, ".tmp");
                Files.write(temp, Arrays.copyOf(image.loadableBytes(), Math.toIntExact(image.byteSize())));
                Files.move(temp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            }
            return file.toString();
        } catch (IOException | RuntimeException e) {
            rejection.addSuppressed(e);
            return null;
        }
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
