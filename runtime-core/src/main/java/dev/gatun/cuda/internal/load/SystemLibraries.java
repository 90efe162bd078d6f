package dev.gatun.cuda.internal.load;

import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.bindings.NativeLibrary;
import dev.gatun.cuda.bindings.NativeLibraryProvider;
import java.util.List;

/**
 * The process's CUDA driver and NVRTC, each searched for ({@link CudaLibraries}) and opened once
 * per class loader that loads Gatun, on first use. Gatun's own downcalls and the generated
 * bindings' resolve in the same opened library: this class is the bindings'
 * {@link NativeLibraryProvider} (runtime-core's module-info and META-INF/services), so a raw
 * generated call reaches the library Gatun uses and, when there is none, fails with the same
 * {@link CudaUnavailableException}. Gatun's own checks on top (cuInit, its minimum versions) are
 * not the bindings' concern: a raw call needs only the library.
 */
public final class SystemLibraries implements NativeLibraryProvider {

    /** For {@link java.util.ServiceLoader}; the libraries are per class, so per class loader. */
    public SystemLibraries() {
    }

    /**
     * The process's library, opened on first use.
     *
     * @param library which library
     * @return the opened library
     * @throws CudaUnavailableException listing every place tried, a new one on every call
     */
    public static NativeLibrary.Opened require(NativeLibrary library) {
        Object state = switch (library) {
            case DRIVER -> Driver.STATE;
            case NVRTC -> Nvrtc.STATE;
        };
        if (state instanceof NativeLibrary.Opened opened) {
            return opened;
        }
        throw ((CudaUnavailableException) state).again();
    }

    @Override
    public NativeLibrary.Opened open(NativeLibrary library) {
        return require(library);
    }

    /**
     * Finds and opens {@code spec}'s library with {@code search}: the library, or the
     * {@link CudaUnavailableException} every user of it will get. Never throws: a class
     * initializer must not, or callers would see ExceptionInInitializerError once and
     * NoClassDefFoundError after.
     */
    public static Object open(LibrarySearch search, LibrarySpec spec) {
        try {
            LibrarySearch.Result found = search.find(spec);
            if (!found.found()) {
                return CudaLibraries.unavailable(spec, found);
            }
            return new NativeLibrary.Opened(found.symbols(), found.path() + " (" + found.how() + ")");
        } catch (RuntimeException | Error e) {
            String message = "loading " + spec.definiteName() + " failed unexpectedly: " + e;
            return new CudaUnavailableException(message, List.of(message), e);
        }
    }

    private static final class Driver {
        static final Object STATE = open(LibrarySearch.ofProcess(), CudaLibraries.DRIVER);
    }

    private static final class Nvrtc {
        static final Object STATE = open(LibrarySearch.ofProcess(), CudaLibraries.nvrtc(System::getenv));
    }
}
