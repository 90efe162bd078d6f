package dev.gatun.cuda.internal.load;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Opens libraries with {@link SymbolLookup#libraryLookup}, which (unlike {@link System#load})
 * registers nothing with the calling class loader: the same library can be opened by every
 * class loader of the process, and each gets the lookup its downcalls are resolved in.
 */
public final class SystemLinkage implements Linkage {

    public static final SystemLinkage INSTANCE = new SystemLinkage();

    private SystemLinkage() {
    }

    @Override
    public Opened open(Path path) {
        if (!Files.isReadable(path)) {
            return Opened.failed("is not readable by this process (check its permissions)");
        }
        try {
            // Safety: the JVM maps the file as the loader of System.load would, with the same
            // guard against libraries that need an executable stack. The global arena keeps
            // it mapped for the process: downcall handles into it must never outlive it, and
            // unmapping a driver with contexts, threads and callbacks is never sound.
            return Opened.library(SymbolLookup.libraryLookup(path, Arena.global()));
        } catch (IllegalArgumentException e) {
            return Opened.failed("is not a loadable shared library: "
                    + DynamicLoader.whyNotLoadable(path.toString()).orElse(e.getMessage()));
        }
    }

    @Override
    public Opened open(String soname) {
        try {
            // Safety: as for a path; the dynamic loader picks the file.
            return Opened.library(SymbolLookup.libraryLookup(soname, Arena.global()));
        } catch (IllegalArgumentException e) {
            return Opened.failed(DynamicLoader.whyNotLoadable(soname).orElse(e.getMessage()));
        }
    }

    @Override
    public Optional<Path> fileOf(MemorySegment symbol) {
        return DynamicLoader.fileOf(symbol);
    }
}
