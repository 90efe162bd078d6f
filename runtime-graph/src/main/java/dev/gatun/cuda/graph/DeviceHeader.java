package dev.gatun.cuda.graph;

import dev.gatun.cuda.GatunException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * One CUDA header shipped inside this module next to this class ({@code gatun_latch.cuh},
 * {@code gatun_conditional.cuh}): its text, read once, and a directory holding it for NVRTC's
 * {@code --include-path}, written once per JVM into a fresh temporary directory (deleted at exit)
 * and written again only if something removed it meanwhile.
 */
final class DeviceHeader {

    private final String fileName;
    private final String directoryPrefix;
    // Guarded by this.
    private String text;
    private Path directory;

    /** @param directoryPrefix the name the temporary include directory starts with */
    DeviceHeader(String fileName, String directoryPrefix) {
        this.fileName = fileName;
        this.directoryPrefix = directoryPrefix;
    }

    /** @throws GatunException when it cannot be read from the module (a broken jar) */
    synchronized String text() {
        if (text == null) {
            text = load();
        }
        return text;
    }

    /** @throws GatunException when the temporary directory cannot be written */
    synchronized Path includeDirectory() {
        if (directory == null || !Files.isRegularFile(directory.resolve(fileName))) {
            directory = write(text());
        }
        return directory;
    }

    private String load() {
        try (InputStream in = DeviceHeader.class.getResourceAsStream(fileName)) {
            if (in == null) {
                throw new GatunException(fileName + " is missing from the runtime-graph jar (it belongs next to "
                        + DeviceHeader.class.getName() + "); the jar is incomplete: rebuild or re-download it");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new GatunException("reading " + fileName + " from the runtime-graph jar failed", e);
        }
    }

    private Path write(String source) {
        try {
            Path created = Files.createTempDirectory(directoryPrefix);
            // Deleted in reverse order of registration: the file first, then its directory.
            created.toFile().deleteOnExit();
            Path file = created.resolve(fileName);
            Files.writeString(file, source, StandardCharsets.UTF_8);
            file.toFile().deleteOnExit();
            return created;
        } catch (IOException e) {
            throw new GatunException("could not write " + fileName + " into a temporary include directory under "
                    + System.getProperty("java.io.tmpdir") + "; point java.io.tmpdir at a writable directory", e);
        }
    }
}
