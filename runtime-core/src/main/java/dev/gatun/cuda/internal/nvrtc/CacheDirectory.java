package dev.gatun.cuda.internal.nvrtc;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SeekableByteChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributeView;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * The files of a kernel cache: one {@code <key>.entry} per key, published atomically. A writer
 * fills a temporary file in the same directory and renames it over the entry, so a reader sees
 * either no entry, the previous one, or the complete new one; concurrent writers of one key
 * (threads or processes) each publish a whole file and the last rename wins. A writer that dies
 * before the rename leaves only its temporary file, never a partial entry.
 *
 * <p>A reader opens only a regular file, never through a symbolic link, and only up to a size
 * cap: the type and size are read (without following links) before the file is opened, so a
 * FIFO, a device or a link planted as an entry is refused without being opened (which would
 * block on a FIFO), and a huge file is refused without being read. Whether the directory itself
 * is trusted is {@link DirectoryTrust}'s question, asked by the cache before it uses this.
 *
 * <p><b>Eviction, least recently used first.</b> An entry's last-modified time is when it was
 * last used: the rename that publishes it sets it, and {@link #markUsed} sets it again on every
 * hit. The modification time, not the access time, because the access time is often not kept
 * ({@code noatime}, or {@code relatime}'s once a day); and a time on the entry itself, not a
 * separate record of uses, because every process of the user shares the directory and would
 * need a lock around such a record. {@link #evictionVictims} lists what to delete to get the
 * entries under a cap, oldest use first; {@link #delete} removes one without following a link.
 */
public final class CacheDirectory {

    static final String ENTRY_SUFFIX = ".entry";
    static final String TEMP_SUFFIX = ".tmp";
    /** The default cap on an entry's size: far above any real module image, far below a heap it could exhaust. */
    public static final long DEFAULT_MAX_ENTRY_BYTES = 256L << 20;
    /** The largest cap: an entry is read into one byte array. */
    public static final long MAX_ENTRY_BYTES_LIMIT = Integer.MAX_VALUE - 8;

    /** An entry that is not read, and why: not a regular file, or too large. */
    public static final class RefusedEntryException extends IOException {
        RefusedEntryException(String reason) {
            super(reason);
        }
    }

    /** Fills a temporary file; a seam so that tests can interrupt or observe a write. */
    @FunctionalInterface
    interface TempWriter {
        void write(Path temp, byte[] bytes) throws IOException;
    }

    private final Path root;
    private final long maxEntryBytes;
    private final TempWriter writer;

    /** Entries of at most {@link #DEFAULT_MAX_ENTRY_BYTES}. */
    public CacheDirectory(Path root) {
        this(root, DEFAULT_MAX_ENTRY_BYTES);
    }

    public CacheDirectory(Path root, long maxEntryBytes) {
        this(root, maxEntryBytes, Files::write);
    }

    CacheDirectory(Path root, TempWriter writer) {
        this(root, DEFAULT_MAX_ENTRY_BYTES, writer);
    }

    CacheDirectory(Path root, long maxEntryBytes, TempWriter writer) {
        if (maxEntryBytes < 1 || maxEntryBytes > MAX_ENTRY_BYTES_LIMIT) {
            throw new IllegalArgumentException("an entry cap of " + maxEntryBytes + " bytes; give 1 to "
                    + MAX_ENTRY_BYTES_LIMIT);
        }
        this.root = root.toAbsolutePath().normalize();
        this.maxEntryBytes = maxEntryBytes;
        this.writer = writer;
    }

    public Path root() {
        return root;
    }

    public long maxEntryBytes() {
        return maxEntryBytes;
    }

    public Path entry(String key) {
        return root.resolve(key + ENTRY_SUFFIX);
    }

    /** Whether the directory exists (as itself: a link to one counts, for the trust check to refuse). */
    public boolean exists() {
        return Files.exists(root, LinkOption.NOFOLLOW_LINKS);
    }

    /** Creates the directory, and any missing above it, readable and writable by the user only (0700) where the file system has POSIX modes. */
    public void create() throws IOException {
        Files.createDirectories(root, privateDirectory(root));
    }

    /** Mode 0700 for a directory created at {@code dir}, where its file system has POSIX modes; nothing elsewhere. */
    static FileAttribute<?>[] privateDirectory(Path dir) {
        if (!dir.getFileSystem().supportedFileAttributeViews().contains("posix")) {
            return new FileAttribute<?>[0]; // e.g. Windows: the directory inherits its parent's ACL
        }
        return new FileAttribute<?>[] {PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------"))};
    }

    /**
     * The entry's bytes, or empty when there is none.
     *
     * @throws RefusedEntryException when the entry is not a regular file, or is larger than the cap
     */
    public Optional<byte[]> read(String key) throws IOException {
        Path entry = entry(key);
        BasicFileAttributes attributes;
        try {
            attributes = Files.readAttributes(entry, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        } catch (NoSuchFileException e) {
            return Optional.empty();
        }
        if (!attributes.isRegularFile()) {
            throw new RefusedEntryException("it is " + (attributes.isSymbolicLink() ? "a symbolic link"
                    : attributes.isDirectory() ? "a directory" : "not a regular file (a FIFO, socket or device)")
                    + ", which the cache never opens");
        }
        checkSize(attributes.size());
        try (SeekableByteChannel in = Files.newByteChannel(entry, Set.of(StandardOpenOption.READ,
                LinkOption.NOFOLLOW_LINKS))) {
            long size = in.size();
            checkSize(size); // replaced since the check above
            ByteBuffer bytes = ByteBuffer.allocate((int) size);
            while (bytes.hasRemaining()) {
                if (in.read(bytes) < 0) {
                    break; // shorter than it said: reported below
                }
            }
            if (bytes.hasRemaining() || in.read(ByteBuffer.allocate(1)) > 0) {
                throw new RefusedEntryException("it changed size while it was read");
            }
            return Optional.of(bytes.array());
        }
    }

    private void checkSize(long size) throws RefusedEntryException {
        if (size > maxEntryBytes) {
            throw new RefusedEntryException("it is " + size + " bytes, more than the cap of " + maxEntryBytes
                    + " (gatun.kernelCache.maxEntryBytes)");
        }
    }

    /**
     * Records a use of {@code key}'s entry now (its last-modified time), so that eviction keeps it
     * longer. Never through a link: a link planted under the entry's name is not followed.
     */
    public void markUsed(String key) throws IOException {
        Files.getFileAttributeView(entry(key), BasicFileAttributeView.class, LinkOption.NOFOLLOW_LINKS)
                .setTimes(FileTime.from(Instant.now()), null, null);
    }

    /** An entry found when listing the directory: when it was last used, and its size. */
    public record Listed(Path path, FileTime used, long bytes) {
    }

    /**
     * The entries to delete, least recently used first, so that the entries left take at most
     * {@code maxBytes} together; never {@code keep}'s (the entry just written, which is kept even
     * when it alone is over the cap). Only regular files named as entries count: a link, a
     * directory or anything else is neither counted nor deleted (the reader refuses it anyway),
     * nor are the temporary files of writers still at work.
     *
     * @throws IOException when the directory cannot be listed
     */
    public List<Listed> evictionVictims(long maxBytes, String keep) throws IOException {
        Path kept = entry(keep);
        List<Listed> others = new ArrayList<>();
        long total = 0;
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(root, "*" + ENTRY_SUFFIX)) {
            for (Path path : entries) {
                BasicFileAttributes attributes;
                try {
                    attributes = Files.readAttributes(path, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
                } catch (NoSuchFileException goneMeanwhile) {
                    continue; // evicted by another process since it was listed
                }
                if (!attributes.isRegularFile()) {
                    continue;
                }
                total += attributes.size();
                if (!path.equals(kept)) {
                    others.add(new Listed(path, attributes.lastModifiedTime(), attributes.size()));
                }
            }
        }
        others.sort(Comparator.comparing(Listed::used).thenComparing(Listed::path));
        List<Listed> victims = new ArrayList<>();
        for (Listed entry : others) {
            if (total <= maxBytes) {
                break;
            }
            victims.add(entry);
            total -= entry.bytes();
        }
        return victims;
    }

    /**
     * Deletes a listed entry; false when it was gone already (another process evicted it). A
     * link put in its place since it was listed is removed itself, never what it points to:
     * unlink(2) does not follow links.
     */
    public boolean delete(Listed entry) throws IOException {
        return Files.deleteIfExists(entry.path());
    }

    /** Publishes {@code bytes} as the entry for {@code key}, replacing any previous one; creates the directory (0700) if needed. */
    public void write(String key, byte[] bytes) throws IOException {
        create();
        // Same directory, so the rename stays on one file system and can be atomic. No fsync:
        // an entry torn by a power loss fails its checksum and is recompiled. The temporary file
        // is created new, readable and writable by the user only (0600 on POSIX).
        Path temp = Files.createTempFile(root, key + ".", TEMP_SUFFIX);
        try {
            writer.write(temp, bytes);
            // rename(2) replaces an existing entry atomically (as does Windows' MoveFileEx),
            // and replaces a link planted under the entry's name rather than following it.
            Files.move(temp, entry(key), StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException | RuntimeException e) {
            try {
                Files.deleteIfExists(temp);
            } catch (IOException cleanup) {
                e.addSuppressed(cleanup);
            }
            throw e;
        }
    }
}
