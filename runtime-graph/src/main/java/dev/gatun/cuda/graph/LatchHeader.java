package dev.gatun.cuda.graph;

import dev.gatun.cuda.GatunException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * {@code gatun_latch.cuh}, the device side of the {@link ValidationLatch}: kernels compiled with
 * NVRTC {@code #include "gatun_latch.cuh"} and call {@code gatun_latch_raise(word, bits)}. The
 * header ships inside this module; {@link #includeDirectory()} puts it on disk for NVRTC's
 * include path.
 */
public final class LatchHeader {

    /** The name kernels include. */
    public static final String FILE_NAME = "gatun_latch.cuh";

    private static final Object LOCK = new Object();
    // Guarded by LOCK.
    private static String text;
    private static Path directory;

    private LatchHeader() {
    }

    /**
     * The header's source, e.g. to hand NVRTC as an in-memory header.
     *
     * @throws GatunException when it cannot be read from the module (a broken jar)
     */
    public static String text() {
        synchronized (LOCK) {
            if (text == null) {
                text = load();
            }
            return text;
        }
    }

    /**
     * A directory holding {@link #FILE_NAME}, for NVRTC's {@code --include-path}. Written once per
     * JVM into a fresh temporary directory (deleted at exit) and written again only if something
     * removed it meanwhile.
     *
     * @throws GatunException when the temporary directory cannot be written
     */
    public static Path includeDirectory() {
        synchronized (LOCK) {
            if (directory == null || !Files.isRegularFile(directory.resolve(FILE_NAME))) {
                directory = write(text());
            }
            return directory;
        }
    }

    private static String load() {
        try (InputStream in = LatchHeader.class.getResourceAsStream(FILE_NAME)) {
            if (in == null) {
                throw new GatunException(FILE_NAME + " is missing from the runtime-graph jar (it belongs next to "
                        + LatchHeader.class.getName() + "); the jar is incomplete: rebuild or re-download it");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new GatunException("reading " + FILE_NAME + " from the runtime-graph jar failed", e);
        }
    }

    private static Path write(String source) {
        try {
            Path created = Files.createTempDirectory("gatun-latch-");
            // Deleted in reverse order of registration: the file first, then its directory.
            created.toFile().deleteOnExit();
            Path file = created.resolve(FILE_NAME);
            Files.writeString(file, source, StandardCharsets.UTF_8);
            file.toFile().deleteOnExit();
            return created;
        } catch (IOException e) {
            throw new GatunException("could not write " + FILE_NAME + " into a temporary include directory under "
                    + System.getProperty("java.io.tmpdir") + "; point java.io.tmpdir at a writable directory", e);
        }
    }
}
