package dev.gatun.cuda.graph;

import dev.gatun.cuda.GatunException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.Optional;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One CUDA header shipped inside this module next to this class ({@code gatun_latch.cuh},
 * {@code gatun_conditional.cuh}): its text, read once, and a directory holding it for NVRTC's
 * {@code --include-path}.
 *
 * <p>The kernel cache keys an include directory by the content of its files, not by its path, so
 * any directory holding the header hits across processes; one directory is still shared by
 * every JVM of the user, so that each does not make one more: {@code <java.io.tmpdir>/<prefix><16
 * hex digits of the header's SHA-256>-<user>}, made with mode 0700. It is used only while it is
 * a directory of the user's that nobody else can write (not a symbolic link): otherwise someone
 * else could change the header under the user's kernels, and a fresh random directory (deleted
 * at exit) is used instead. The header is written into it at
 * first use in each JVM (a rename, so a compile in another JVM never sees half of it), and
 * again only if something removed it meanwhile.
 */
final class DeviceHeader {

    private static final Logger LOG = LoggerFactory.getLogger(DeviceHeader.class);
    private static final Set<PosixFilePermission> OWNER_ONLY = EnumSet.of(PosixFilePermission.OWNER_READ,
            PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_EXECUTE);

    private final String fileName;
    private final String directoryPrefix;
    private final Path parent;
    // Guarded by this.
    private String text;
    private Path directory;

    /** @param directoryPrefix the name the include directory starts with */
    DeviceHeader(String fileName, String directoryPrefix) {
        this(fileName, directoryPrefix, Path.of(System.getProperty("java.io.tmpdir")));
    }

    /** As above, under {@code parent} instead of {@code java.io.tmpdir}. */
    DeviceHeader(String fileName, String directoryPrefix, Path parent) {
        this.fileName = fileName;
        this.directoryPrefix = directoryPrefix;
        this.parent = parent.toAbsolutePath().normalize();
    }

    /** @throws GatunException when it cannot be read from the module (a broken jar) */
    synchronized String text() {
        if (text == null) {
            text = load();
        }
        return text;
    }

    /** @throws GatunException when the directory cannot be written */
    synchronized Path includeDirectory() {
        if (directory == null || !Files.isRegularFile(directory.resolve(fileName), LinkOption.NOFOLLOW_LINKS)) {
            directory = write(text());
        }
        return directory;
    }

    private String load() {
        try (InputStream in = DeviceHeader.class.getResourceAsStream(fileName)) {
            if (in == null) {
                throw new GatunException(fileName + " is missing from the gatun-graph jar (it belongs next to "
                        + DeviceHeader.class.getName() + "); the jar is incomplete: rebuild or re-download it");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new GatunException("reading " + fileName + " from the gatun-graph jar failed", e);
        }
    }

    private Path write(String source) {
        try {
            // Written where it goes in one rename; made by this process, so its owner is the user.
            Path temp = Files.createTempFile(parent, directoryPrefix, ".tmp");
            try {
                Files.writeString(temp, source, StandardCharsets.UTF_8);
                Path shared = parent.resolve(directoryPrefix + digest(source) + "-" + safe(Files.getOwner(temp)));
                Optional<String> untrusted = privateDirectory(shared, Files.getOwner(temp));
                if (untrusted.isEmpty()) {
                    Files.move(temp, shared.resolve(fileName), StandardCopyOption.ATOMIC_MOVE);
                    return shared;
                }
                LOG.warn("not using {} for {}: {}; using a fresh directory instead", shared, fileName,
                        untrusted.get());
                return fresh(source);
            } finally {
                Files.deleteIfExists(temp);
            }
        } catch (IOException e) {
            throw new GatunException("could not write " + fileName + " into an include directory under " + parent
                    + "; point java.io.tmpdir at a writable directory", e);
        }
    }

    /** Makes {@code dir} (0700) unless it exists; why it may not hold the header, or empty when it may. */
    private static Optional<String> privateDirectory(Path dir, UserPrincipal user) throws IOException {
        if (!dir.getFileSystem().supportedFileAttributeViews().contains("posix")) {
            return Optional.of("its owner and mode cannot be checked on this file system");
        }
        FileAttribute<?> mode = PosixFilePermissions.asFileAttribute(OWNER_ONLY);
        try {
            Files.createDirectory(dir, mode);
        } catch (FileAlreadyExistsException e) {
            // made by an earlier JVM of the user's, or by someone else: checked below
        }
        PosixFileAttributes a = Files.readAttributes(dir, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        if (a.isSymbolicLink() || !a.isDirectory()) {
            return Optional.of("it is not a directory but " + (a.isSymbolicLink() ? "a symbolic link" : "a file"));
        }
        if (!a.owner().equals(user)) {
            return Optional.of("it belongs to " + a.owner().getName() + ", not to " + user.getName());
        }
        if (!OWNER_ONLY.containsAll(a.permissions())) {
            return Optional.of("others may use it (" + PosixFilePermissions.toString(a.permissions()) + ")");
        }
        return Optional.empty();
    }

    /** A new directory of its own (0700), deleted at exit: the fallback, unique to this JVM. */
    private Path fresh(String source) throws IOException {
        Path created = Files.createTempDirectory(parent, directoryPrefix);
        // Deleted in reverse order of registration: the file first, then its directory.
        created.toFile().deleteOnExit();
        Path file = created.resolve(fileName);
        Files.writeString(file, source, StandardCharsets.UTF_8);
        file.toFile().deleteOnExit();
        return created;
    }

    /** 16 hex digits of the SHA-256 of {@code source}: another header text, another directory. */
    private static String digest(String source) {
        try {
            byte[] sha = MessageDigest.getInstance("SHA-256").digest(source.getBytes(StandardCharsets.UTF_8));
            return HexFormat.of().formatHex(sha, 0, 8);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("this Java runtime lacks SHA-256, which the platform requires", e);
        }
    }

    /** The user's name as a file name part: letters, digits, '.', '_' and '-' kept, anything else '_'. */
    private static String safe(UserPrincipal user) {
        return user.getName().replaceAll("[^A-Za-z0-9._-]", "_");
    }
}
