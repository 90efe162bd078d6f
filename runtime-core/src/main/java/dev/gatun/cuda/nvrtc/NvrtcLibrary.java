package dev.gatun.cuda.nvrtc;

import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.bindings.NativeLibrary;
import dev.gatun.cuda.internal.load.SystemLibraries;
import dev.gatun.cuda.internal.nvrtc.NativeNvrtcApi;
import dev.gatun.cuda.internal.nvrtc.NvrtcApi;
import dev.gatun.cuda.internal.nvrtc.NvrtcResults;
import dev.gatun.cuda.internal.nvrtc.ToolkitHeaders;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Supplier;

/**
 * The process's NVRTC (CUDA's runtime compiler), found and loaded on first use. NVRTC is
 * independent of the driver: a machine can have one without the other.
 *
 * <p>Without NVRTC, {@link #isAvailable()} is false and {@link #system()} throws
 * {@link CudaUnavailableException} listing every path tried, on every call. With it,
 * {@link #compiler()} compiles CUDA C++ to PTX or CUBIN.
 */
public final class NvrtcLibrary {

    /** The oldest NVRTC Gatun accepts; it exports every function Gatun calls. */
    static final int MINIMUM_MAJOR_VERSION = 12;

    private final NvrtcApi api;
    private final String library;
    private final int major;
    private final int minor;

    private NvrtcLibrary(NvrtcApi api, String library, int major, int minor) {
        this.api = api;
        this.library = library;
        this.major = major;
        this.minor = minor;
    }

    /**
     * An NVRTC reached through {@code api}, which must answer {@code nvrtcVersion}. Tests pass a
     * simulated compiler.
     *
     * @param library where the library came from, for messages
     * @throws CudaUnavailableException when nvrtcVersion fails, or NVRTC is older than 12
     */
    static NvrtcLibrary create(NvrtcApi api, String library) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment major = arena.allocate(ValueLayout.JAVA_INT);
            MemorySegment minor = arena.allocate(ValueLayout.JAVA_INT);
            int r = api.nvrtcVersion(major, minor);
            if (r != 0) {
                String message = library + " loaded, but nvrtcVersion failed with " + NvrtcResults.name(r) + " (" + r
                        + ")";
                throw new CudaUnavailableException(message, List.of(message));
            }
            NvrtcLibrary nvrtc = new NvrtcLibrary(api, library, major.get(ValueLayout.JAVA_INT, 0),
                    minor.get(ValueLayout.JAVA_INT, 0));
            if (nvrtc.major < MINIMUM_MAJOR_VERSION) {
                // An unversioned libnvrtc.so can be any toolkit's; an old one may lack functions
                // Gatun calls, and a missing symbol would surface as a linkage error mid-compile.
                String message = library + " is NVRTC " + nvrtc.version() + "; Gatun needs NVRTC "
                        + MINIMUM_MAJOR_VERSION + " or newer. Install a newer CUDA toolkit's NVRTC, or point "
                        + "Gatun at one with -Dgatun.nvrtc=/path/to/libnvrtc.so.13 or GATUN_NVRTC.";
                throw new CudaUnavailableException(message, List.of(message));
            }
            return nvrtc;
        }
    }

    /** {@return whether NVRTC could be loaded} Never throws. */
    public static boolean isAvailable() {
        return Holder.STATE instanceof NvrtcLibrary;
    }

    /**
     * {@return the process's NVRTC}
     *
     * @throws CudaUnavailableException when no NVRTC library could be loaded
     */
    public static NvrtcLibrary system() {
        Object state = Holder.STATE;
        if (state instanceof NvrtcLibrary nvrtc) {
            return nvrtc;
        }
        throw ((CudaUnavailableException) state).again();
    }

    /** {@return where the library was loaded from, and how it was found} */
    public String library() {
        return library;
    }

    /** {@return NVRTC's own version ({@code nvrtcVersion}), e.g. 13.0} */
    public String version() {
        return major + "." + minor;
    }

    /** {@return NVRTC's major version, e.g. 13 for 13.0} */
    public int majorVersion() {
        return major;
    }

    /** {@return NVRTC's minor version, e.g. 0 for 13.0} */
    public int minorVersion() {
        return minor;
    }

    /**
     * {@return a compiler using the {@link KernelCache#defaultCache() default cache} and the toolkit
     * headers found now (see {@link NvrtcCompiler})}
     *
     * @throws IllegalArgumentException when the kernel cache's system property is malformed
     */
    public NvrtcCompiler compiler() {
        return compiler(KernelCache.defaultCache());
    }

    /**
     * A compiler using {@code cache}; pass {@link KernelCache#disabled()} for none.
     *
     * @param cache the cache the compiler reads and writes
     * @return the compiler
     */
    public NvrtcCompiler compiler(KernelCache cache) {
        return compiler(cache, ToolkitHeaders.discover());
    }

    NvrtcCompiler compiler(KernelCache cache, List<Path> toolkitIncludeDirectories) {
        return new NvrtcCompiler(api, version(), cache, toolkitIncludeDirectories);
    }

    private static final class Holder {
        // The library the raw bindings call too (SystemLibraries is their provider).
        static final Object STATE = load(() -> SystemLibraries.require(NativeLibrary.NVRTC));
    }

    /**
     * Checks the NVRTC {@code library} opens: the {@link NvrtcLibrary}, or the
     * {@link CudaUnavailableException} that every caller will get. Never throws (see
     * {@code Driver.load}).
     */
    static Object load(Supplier<NativeLibrary.Opened> library) {
        try {
            NativeLibrary.Opened opened = library.get();
            return create(new NativeNvrtcApi(opened.symbols(), opened.origin()), opened.origin());
        } catch (CudaUnavailableException e) {
            return e;
        } catch (RuntimeException | Error e) {
            String message = "loading NVRTC failed unexpectedly: " + e;
            return new CudaUnavailableException(message, List.of(message), e);
        }
    }
}
