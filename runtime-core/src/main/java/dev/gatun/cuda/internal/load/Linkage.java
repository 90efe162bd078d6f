package dev.gatun.cuda.internal.load;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Opening a shared library, behind a seam so that the search order and its report can be
 * tested without touching the process's real dynamic loader. An opened library is its own
 * {@link SymbolLookup}: every downcall into it is resolved there, never through a class
 * loader's registry, so any number of class loaders can open the same library.
 */
public interface Linkage {

    /** A library opened, or why it could not be. */
    record Opened(SymbolLookup symbols, String failure) {
        public static Opened library(SymbolLookup symbols) {
            return new Opened(symbols, null);
        }

        public static Opened failed(String why) {
            return new Opened(null, why);
        }

        public boolean succeeded() {
            return symbols != null;
        }
    }

    /**
     * Opens the library at this absolute path, for the life of the process.
     *
     * @return on failure, what is wrong with the file, worded to follow its path
     *         ("is not readable by this process")
     */
    Opened open(Path path);

    /**
     * Opens a library by soname through the dynamic loader's own search (ld.so.cache,
     * LD_LIBRARY_PATH, ...), for the life of the process.
     *
     * @return on failure, the dynamic loader's reason
     */
    Opened open(String soname);

    /** The file holding a symbol of an opened library ({@code dladdr}), or empty when that is unknown. */
    Optional<Path> fileOf(MemorySegment symbol);
}
