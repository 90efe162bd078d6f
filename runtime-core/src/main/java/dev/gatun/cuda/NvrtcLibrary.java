package dev.gatun.cuda;

import dev.gatun.cuda.bindings.nvrtc.Nvrtc;
import dev.gatun.cuda.internal.load.CudaLibraries;
import dev.gatun.cuda.internal.load.LibrarySearch;
import dev.gatun.cuda.internal.load.LibrarySpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;

/**
 * The process's NVRTC (CUDA's runtime compiler), found and loaded on first use. NVRTC is
 * independent of the driver: a machine can have one without the other.
 *
 * <p>Without NVRTC, {@link #isAvailable()} is false and {@link #system()} throws
 * {@link CudaUnavailableException} listing every path tried, on every call.
 */
public final class NvrtcLibrary {

    private final String library;
    private final int major;
    private final int minor;

    private NvrtcLibrary(String library, int major, int minor) {
        this.library = library;
        this.major = major;
        this.minor = minor;
    }

    /** Whether NVRTC could be loaded. Never throws. */
    public static boolean isAvailable() {
        return Holder.STATE instanceof NvrtcLibrary;
    }

    /**
     * The process's NVRTC.
     *
     * @throws CudaUnavailableException when no NVRTC library could be loaded
     */
    public static NvrtcLibrary system() {
        Object state = Holder.STATE;
        if (state instanceof NvrtcLibrary nvrtc) {
            return nvrtc;
        }
        CudaUnavailableException first = (CudaUnavailableException) state;
        throw new CudaUnavailableException(first.getMessage(), first.attempts());
    }

    /** Where the library was loaded from, and how it was found. */
    public String library() {
        return library;
    }

    /** NVRTC's own version ({@code nvrtcVersion}), e.g. 13.0. */
    public String version() {
        return major + "." + minor;
    }

    public int majorVersion() {
        return major;
    }

    public int minorVersion() {
        return minor;
    }

    private static final class Holder {
        static final Object STATE = load();

        private static Object load() {
            // Never let a class initializer throw: see Driver.SystemDriver.
            try {
                LibrarySpec spec = CudaLibraries.nvrtc(System::getenv);
                LibrarySearch.Result found = LibrarySearch.ofProcess().find(spec);
                if (!found.found()) {
                    return new CudaUnavailableException(CudaLibraries.diagnosis(spec, found.attempts()), found.attempts());
                }
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment major = arena.allocate(ValueLayout.JAVA_INT);
                    MemorySegment minor = arena.allocate(ValueLayout.JAVA_INT);
                    // Safety: nvrtcVersion writes one int through each pointer; both live
                    // across the call. The library was just registered with this class loader.
                    int r = Nvrtc.nvrtcVersion(major, minor);
                    if (r != 0) {
                        String message = found.path() + " loaded, but nvrtcVersion failed with nvrtcResult " + r;
                        return new CudaUnavailableException(message, List.of(message));
                    }
                    return new NvrtcLibrary(found.path() + " (" + found.how() + ")", major.get(ValueLayout.JAVA_INT, 0),
                            minor.get(ValueLayout.JAVA_INT, 0));
                }
            } catch (RuntimeException | LinkageError e) {
                String message = "loading NVRTC failed unexpectedly: " + e;
                return new CudaUnavailableException(message, List.of(message));
            }
        }
    }
}
