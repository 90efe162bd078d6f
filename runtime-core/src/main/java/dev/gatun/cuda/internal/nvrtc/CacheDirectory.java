package dev.gatun.cuda.internal.nvrtc;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Optional;

/**
 * The files of a kernel cache: one {@code <key>.entry} per key, published atomically. A writer
 * fills a temporary file in the same directory and renames it over the entry, so a reader sees
 * either no entry, the previous one, or the complete new one; concurrent writers of one key
 * (threads or processes) each publish a whole file and the last rename wins. A writer that dies
 * before the rename leaves only its temporary file, never a partial entry.
 */
public final class CacheDirectory {

    static final String ENTRY_SUFFIX = ".entry";
    static final String TEMP_SUFFIX = ".tmp";

    /** Fills a temporary file; a seam so that tests can interrupt or observe a write. */
    @FunctionalInterface
    interface TempWriter {
        void write(Path temp, byte[] bytes) throws IOException;
    }

    private final Path root;
    private final TempWriter writer;

    public CacheDirectory(Path root) {
        this(root, Files::write);
    }

    CacheDirectory(Path root, TempWriter writer) {
        this.root = root.toAbsolutePath().normalize();
        this.writer = writer;
    }

    public Path root() {
        return root;
    }

    public Path entry(String key) {
        return root.resolve(key + ENTRY_SUFFIX);
    }

    /** The entry's bytes, or empty when there is none. */
    public Optional<byte[]> read(String key) throws IOException {
        try {
            return Optional.of(Files.readAllBytes(entry(key)));
        } catch (NoSuchFileException e) {
            return Optional.empty();
        }
    }

    /** Publishes {@code bytes} as the entry for {@code key}, replacing any previous one. */
    public void write(String key, byte[] bytes) throws IOException {
        Files.createDirectories(root);
        // Same directory, so the rename stays on one file system and can be atomic. No fsync:
        // an entry torn by a power loss fails its checksum and is recompiled.
        Path temp = Files.createTempFile(root, key + ".", TEMP_SUFFIX);
        try {
            writer.write(temp, bytes);
            // rename(2) replaces an existing entry atomically (as does Windows' MoveFileEx).
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
