package dev.gatun.cuda.internal.load;

import java.nio.file.Path;

/**
 * The two ways of loading a shared library, behind a seam so that the search order and its
 * report can be tested without touching the process's real dynamic loader.
 */
public interface Linkage {

    /** Outcome of one attempt: the absolute path loaded, or why it failed. */
    record Outcome(Path loaded, String failure) {
        static Outcome loaded(Path path) {
            return new Outcome(path, null);
        }

        static Outcome failed(String why) {
            return new Outcome(null, why);
        }

        public boolean succeeded() {
            return loaded != null;
        }
    }

    /** Loads the library at this absolute path. */
    Outcome loadFile(Path path);

    /**
     * Loads the library by soname through the dynamic loader's own search (ld.so.cache,
     * LD_LIBRARY_PATH, ...), and reports the file it resolved to.
     *
     * @param probeSymbol a symbol the library exports, used to learn which file was mapped
     */
    Outcome loadByName(String soname, String probeSymbol);
}
