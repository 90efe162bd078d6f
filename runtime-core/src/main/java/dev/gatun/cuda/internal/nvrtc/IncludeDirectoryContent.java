package dev.gatun.cuda.internal.nvrtc;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.FileVisitOption;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * What a compile can read through one of the caller's include directories, as one SHA-256: the
 * relative name and content of every regular file under it, and not its path. NVRTC does not
 * say which headers it read, so every file that an {@code #include} could reach counts; the
 * path does not, so the same headers unpacked into another (temporary) directory give the same
 * digest, and a header changed in place gives another.
 *
 * <p>Links are followed, as NVRTC follows them; a link loop fails the digest. A directory that
 * does not exist (NVRTC ignores it) and a path that is not a directory have digests of their own.
 */
public final class IncludeDirectoryContent {

    /** Changes whenever the encoding below does. */
    private static final String ENCODING = "gatun-include-directory/1";
    private static final String ABSENT = "absent";
    private static final String NOT_A_DIRECTORY = "not a directory";
    private static final int CHUNK = 64 * 1024;

    private IncludeDirectoryContent() {
    }

    /**
     * 64 lower-case hex digits.
     *
     * @throws IOException when the directory cannot be listed, a file under it cannot be read, or
     *     its links loop
     */
    public static String digest(Path dir) throws IOException {
        MessageDigest digest = Sha256.newDigest();
        CacheKey.text(digest, ENCODING);
        if (!Files.exists(dir)) {
            CacheKey.text(digest, ABSENT);
        } else if (!Files.isDirectory(dir)) {
            CacheKey.text(digest, NOT_A_DIRECTORY);
        } else {
            // Sorted by the '/'-joined relative name, so the order is the same on every file system.
            TreeMap<String, Path> files = new TreeMap<>();
            try (Stream<Path> walk = Files.walk(dir, FileVisitOption.FOLLOW_LINKS)) {
                for (Path file : (Iterable<Path>) walk::iterator) {
                    if (Files.isRegularFile(file)) {
                        files.put(relativeName(dir, file), file);
                    }
                }
            } catch (UncheckedIOException e) {
                throw e.getCause(); // Files.walk's iterator wraps what it meets while walking
            }
            CacheKey.text(digest, Integer.toString(files.size()));
            for (var file : files.entrySet()) {
                CacheKey.text(digest, file.getKey());
                digest.update(contentDigest(file.getValue())); // fixed length: no boundary to shift
            }
        }
        return HexFormat.of().formatHex(digest.digest());
    }

    private static String relativeName(Path dir, Path file) {
        List<String> names = new ArrayList<>();
        for (Path name : dir.relativize(file)) {
            names.add(name.toString());
        }
        return String.join("/", names);
    }

    private static byte[] contentDigest(Path file) throws IOException {
        MessageDigest digest = Sha256.newDigest();
        byte[] buffer = new byte[CHUNK];
        try (InputStream in = Files.newInputStream(file)) {
            for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
                digest.update(buffer, 0, n);
            }
        }
        return digest.digest();
    }
}
