package dev.gatun.cuda.internal.nvrtc;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.security.SecureRandom;
import java.util.EnumSet;
import java.util.Optional;
import java.util.Set;

/**
 * The per-user secret of the kernel cache's authenticated mode: {@value #BYTES} random bytes in
 * a file of the user's that nobody else can read or write (mode 0600 when Gatun creates it), in a
 * directory that {@link DirectoryTrust} trusts. Entries are authenticated with an HMAC under it
 * ({@link CacheEntryFormat}), so someone who can write the cache directory but cannot read this
 * file cannot make an entry Gatun loads.
 */
public final class EntryKey {

    /** The key's length: 256 bits, HMAC-SHA256's output size. */
    public static final int BYTES = 32;

    private static final Set<PosixFilePermission> OWNER_ONLY =
            EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE);

    private EntryKey() {
    }

    /**
     * The key in {@code file}, made first (with a new random key, atomically: concurrent
     * processes end up with one key) when it does not exist.
     *
     * @throws IOException with the reason as its message when the file or its directory is not
     *     trusted, or is not a key, or cannot be read or written
     */
    public static byte[] loadOrCreate(Path file, UserPrincipal user) throws IOException {
        Path dir = file.toAbsolutePath().normalize().getParent();
        Files.createDirectories(dir, CacheDirectory.privateDirectory(dir));
        Optional<String> untrusted = DirectoryTrust.problem(dir, true, user);
        if (untrusted.isPresent()) {
            throw new IOException("the directory of the key file " + file + " is not used: " + untrusted.get());
        }
        try {
            return read(file, user);
        } catch (NoSuchFileException absent) {
            create(file);
            return read(file, user);
        }
    }

    private static byte[] read(Path file, UserPrincipal user) throws IOException {
        BasicFileAttributes attributes = Files.readAttributes(file, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        if (!attributes.isRegularFile()) {
            throw new IOException("the key file " + file + " is not a regular file"
                    + (attributes.isSymbolicLink() ? " but a symbolic link" : ""));
        }
        if (attributes.size() != BYTES) {
            throw new IOException("the key file " + file + " holds " + attributes.size() + " bytes, not " + BYTES
                    + "; delete it to have Gatun make a new key (entries made under the old one are then recompiled)");
        }
        PosixFileAttributeView posix = Files.getFileAttributeView(file, PosixFileAttributeView.class,
                LinkOption.NOFOLLOW_LINKS);
        if (posix != null) {
            PosixFileAttributes p = posix.readAttributes();
            if (!p.owner().equals(user)) {
                throw new IOException("the key file " + file + " belongs to " + p.owner().getName() + ", not to "
                        + user.getName());
            }
            if (!OWNER_ONLY.containsAll(p.permissions())) {
                throw new IOException("the key file " + file + " can be read or written by others ("
                        + PosixFilePermissions.toString(p.permissions()) + "); chmod 600 it");
            }
        }
        return Files.readAllBytes(file); // a regular file of BYTES bytes, checked above
    }

    /** Writes a new key to a private temporary file, then links it to {@code file} unless another process did first. */
    private static void create(Path file) throws IOException {
        byte[] key = new byte[BYTES];
        new SecureRandom().nextBytes(key);
        Path temp = Files.createTempFile(file.toAbsolutePath().getParent(), ".key-", ".tmp"); // 0600 on POSIX
        try {
            Files.write(temp, key);
            try {
                Files.createLink(file, temp); // atomic, and fails when the key exists: never replaces one
            } catch (FileAlreadyExistsException another) {
                // another process made it first: use theirs
            } catch (UnsupportedOperationException | FileSystemException noHardLinks) {
                try {
                    Files.move(temp, file); // not atomic against a concurrent creator, but never replaces a key
                } catch (FileAlreadyExistsException another) {
                    // as above
                }
            }
        } finally {
            Files.deleteIfExists(temp);
        }
    }
}
