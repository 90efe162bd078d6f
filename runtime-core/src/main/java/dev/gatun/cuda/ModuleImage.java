package dev.gatun.cuda;

import dev.gatun.cuda.internal.image.ElfImage;
import dev.gatun.cuda.internal.image.FatbinImage;
import dev.gatun.cuda.internal.image.ImageFormatException;
import dev.gatun.cuda.internal.image.PtxImage;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * A loadable GPU code image: PTX text, a CUBIN (an ELF for one architecture) or a fatbin (several
 * images in NVIDIA's container), with the name of the artifact it came from and its SHA-256.
 *
 * <p>The bytes are checked when the image is made: the driver is handed a pointer and no
 * length, and follows the offsets and sizes inside the image, so a truncated or corrupt one
 * could crash the process. Every table, section and entry must lie within the bytes, or the
 * image is refused with an {@link IllegalArgumentException} that names the artifact and what is
 * wrong where. PTX is text that the driver reads up to its first NUL:
 * it must hold {@code .version} and {@code .target} directives, may end in NULs but hold none
 * before its end, and is handed to the driver with a NUL appended when it has none.
 */
public final class ModuleImage {

    /** What kind of image the bytes are. */
    public enum Kind {
        /** PTX text, which the driver compiles for the device when it loads it. */
        PTX,
        /** A CUBIN: an ELF binary for one architecture. */
        CUBIN,
        /** A fatbin: a container of CUBINs and PTX for several architectures. */
        FATBIN
    }

    private static final byte[] ELF_MAGIC = {0x7f, 'E', 'L', 'F'};
    /** The fatbin container's magic number 0xBA55ED50, little-endian. */
    private static final byte[] FATBIN_MAGIC = {0x50, (byte) 0xED, 0x55, (byte) 0xBA};

    private final Kind kind;
    private final byte[] bytes;
    private final String artifact;
    private final String sha256;
    /** Name expression to lowered (mangled) name, e.g. {@code scale<float>}; empty unless NVRTC made it. */
    private final Map<String, String> loweredNames;

    private ModuleImage(Kind kind, byte[] bytes, String artifact) {
        this.artifact = Objects.requireNonNull(artifact);
        check(kind, bytes, artifact);
        this.kind = kind;
        this.bytes = bytes;
        this.sha256 = sha256(bytes);
        this.loweredNames = Map.of();
    }

    private ModuleImage(ModuleImage image, Map<String, String> loweredNames) {
        this.artifact = image.artifact;
        this.kind = image.kind;
        this.bytes = image.bytes;
        this.sha256 = image.sha256;
        this.loweredNames = Map.copyOf(loweredNames);
    }

    /**
     * This image, with the lowered (mangled) names of C++ name expressions, so that kernels can
     * be looked up by expression ({@code ModuleRegistry.kernel(name, "scale<float>")}); a
     * compiler that lowered them (NVRTC) supplies the map.
     *
     * @param loweredNames each name expression to its lowered name
     * @return a copy of this image that carries the names
     */
    public ModuleImage withLoweredNames(Map<String, String> loweredNames) {
        return new ModuleImage(this, loweredNames);
    }

    /**
     * {@return the map from name expression to lowered name; empty for an image that was not compiled
     * with name expressions}
     */
    public Map<String, String> loweredNames() {
        return loweredNames;
    }

    private static void check(Kind kind, byte[] bytes, String artifact) {
        if (bytes.length == 0) {
            throw new IllegalArgumentException("module image " + artifact + " is empty; load the file as nvcc, NVRTC "
                    + "or fatbinary wrote it");
        }
        MemorySegment image = MemorySegment.ofArray(bytes);
        try {
            switch (kind) {
                case CUBIN -> ElfImage.check(image);
                case FATBIN -> FatbinImage.check(image);
                case PTX -> PtxImage.check(image);
            }
        } catch (ImageFormatException e) {
            throw new IllegalArgumentException("module image " + artifact + " (" + kind + ", "
                    + String.format(Locale.ROOT, "%,d", bytes.length) + " bytes) is malformed: " + e.getMessage()
                    + "; it is truncated, corrupt or no GPU image, and was not handed to the driver. Load the complete"
                    + " file as nvcc, NVRTC or fatbinary wrote it");
        }
    }

    /**
     * PTX source text.
     *
     * @param artifact where the text came from, for logs and {@link ModuleInfo}
     * @param ptx the PTX text
     * @return the image
     * @throws IllegalArgumentException when the text lacks {@code .version} or {@code .target},
     *     or holds a NUL before its end
     */
    public static ModuleImage ptx(String artifact, String ptx) {
        return new ModuleImage(Kind.PTX, ptx.getBytes(StandardCharsets.UTF_8), artifact);
    }

    /**
     * Bytes whose kind is recognized from their first bytes: ELF is a CUBIN, the fatbin magic a
     * fatbin, else PTX.
     *
     * @param artifact where the bytes came from, for logs and {@link ModuleInfo}
     * @param bytes the image bytes
     * @return the image
     * @throws IllegalArgumentException when the bytes are not a well-formed image of that kind
     */
    public static ModuleImage of(String artifact, byte[] bytes) {
        byte[] copy = bytes.clone();
        return new ModuleImage(detect(copy), copy, artifact);
    }

    /**
     * A file: PTX, CUBIN or fatbin, recognized from its contents.
     *
     * @param file the file to read
     * @return the image, with the file's path as its artifact
     * @throws IllegalArgumentException when the file is not a well-formed image
     */
    public static ModuleImage fromFile(Path file) {
        try {
            return of(file.toString(), Files.readAllBytes(file));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read module image " + file, e);
        }
    }

    /**
     * A class-path resource, resolved like {@link Class#getResourceAsStream(String)} on {@code anchor}.
     *
     * @param anchor the class the resource name is resolved against
     * @param resource the resource name
     * @return the image, with the resource's name as its artifact
     */
    public static ModuleImage fromResource(Class<?> anchor, String resource) {
        try (InputStream in = anchor.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalArgumentException("no class-path resource " + resource + " next to " + anchor.getName());
            }
            return of("resource:" + resource, in.readAllBytes());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read module resource " + resource, e);
        }
    }

    static Kind detect(byte[] bytes) {
        if (startsWith(bytes, ELF_MAGIC)) {
            return Kind.CUBIN;
        }
        if (startsWith(bytes, FATBIN_MAGIC)) {
            return Kind.FATBIN;
        }
        return Kind.PTX;
    }

    private static boolean startsWith(byte[] bytes, byte[] prefix) {
        return bytes.length >= prefix.length && Arrays.equals(bytes, 0, prefix.length, prefix, 0, prefix.length);
    }

    /** {@return what kind of image the bytes are} */
    public Kind kind() {
        return kind;
    }

    /** {@return where the image came from (a file, a resource, a compiler), for logs and {@link ModuleInfo}} */
    public String artifact() {
        return artifact;
    }

    /** {@return hex SHA-256 of the image bytes} */
    public String sha256() {
        return sha256;
    }

    /** {@return the image's length in bytes} */
    public long byteSize() {
        return bytes.length;
    }

    /** The bytes as cuModuleLoadData wants them: PTX gets its terminating NUL. */
    byte[] loadableBytes() {
        if (kind != Kind.PTX || (bytes.length > 0 && bytes[bytes.length - 1] == 0)) {
            return bytes;
        }
        return Arrays.copyOf(bytes, bytes.length + 1);
    }

    private static String sha256(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK provides SHA-256", e);
        }
    }

    @Override
    public String toString() {
        return kind + " " + artifact + " (" + bytes.length + " bytes, sha256 " + sha256.substring(0, 12) + "…)";
    }
}
