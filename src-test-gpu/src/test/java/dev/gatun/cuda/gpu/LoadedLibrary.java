package dev.gatun.cuda.gpu;

import java.nio.file.Path;

/**
 * Reads the file back out of Gatun's description of a loaded library,
 * {@code "<absolute path> (<how it was found>)"}, as {@code Cuda.driverLibrary()} and
 * {@code NvrtcLibrary.library()} give it.
 */
final class LoadedLibrary {

    private LoadedLibrary() {
    }

    /**
     * @throws IllegalArgumentException when the description does not start with an absolute path
     */
    static Path path(String description) {
        // The first " (" ends the path: the "how" part may itself contain parentheses,
        // e.g. "dynamic loader (libcuda.so.1)".
        int how = description.indexOf(" (");
        Path path = Path.of(how < 0 ? description : description.substring(0, how));
        if (!path.isAbsolute()) {
            throw new IllegalArgumentException("not an absolute library path: \"" + description + "\"");
        }
        return path;
    }
}
