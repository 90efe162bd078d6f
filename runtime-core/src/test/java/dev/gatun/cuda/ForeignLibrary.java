package dev.gatun.cuda;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * A real shared library that is neither the CUDA driver nor NVRTC (zlib, which every Linux
 * distribution ships), for tests of an override that names the wrong library.
 */
final class ForeignLibrary {

    private static final List<String> DIRECTORIES = List.of("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
            "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/usr/lib");

    private ForeignLibrary() {
    }

    static Optional<Path> zlib() {
        return DIRECTORIES.stream().map(d -> Path.of(d, "libz.so.1")).filter(Files::isReadable).findFirst();
    }
}
