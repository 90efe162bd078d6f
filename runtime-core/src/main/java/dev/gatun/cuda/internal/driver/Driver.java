package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.CudaVersion;
import dev.gatun.cuda.DriverTooOldException;
import dev.gatun.cuda.GatunException;
import dev.gatun.cuda.bindings.NativeLibrary;
import dev.gatun.cuda.internal.load.SystemLibraries;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.function.Supplier;

/**
 * A loaded, initialized CUDA driver: the {@link DriverApi} to call, the CUDA version it
 * supports, where it came from, and the checks that turn its results into typed exceptions.
 *
 * <p>The process's driver ({@link #system()}) is loaded and {@code cuInit}-ed once per class
 * loader that loads Gatun, by the first caller, under the class-initialization lock; a failure
 * is remembered and reported as a fresh {@link CudaUnavailableException} to every caller.
 * Tests build their own instance over a simulated driver with {@link #create}.
 */
public final class Driver {

    /** Gatun's baseline: the oldest driver whose API (as used here) Gatun supports. */
    public static final int MINIMUM_VERSION = 12000;

    private final DriverApi api;
    private final CudaVersion version;
    private final String library;
    /**
     * Per {@link DriverFunction}, whether the driver has it, once seen (an answer that never
     * changes, so threads that race here write the same, and no lock is taken: {@link #require}
     * runs where a virtual thread must not wait). A function not seen yet is asked for again.
     */
    private final boolean[] has = new boolean[DriverFunction.values().length];

    private Driver(DriverApi api, CudaVersion version, String library) {
        this.api = api;
        this.version = version;
        this.library = library;
    }

    /**
     * Initializes a driver reached through {@code api}: {@code cuInit(0)}, the version, then the
     * callback of its error log ({@code DriverLog}, where the driver keeps one), through which
     * {@link #api()} then reports each call's result ({@code AttributedDriverApi}).
     *
     * @param library where the driver came from, for messages (a path, or "simulated")
     * @throws CudaUnavailableException when cuInit fails or the driver is older than 12.0
     */
    public static Driver create(DriverApi api, String library) {
        int init = api.cuInit(0);
        if (init != 0) {
            throw unavailable(library + " loaded, but cuInit failed: " + CuResults.name(init) + " (" + init + ")"
                    + suffixed(describe(api, init)) + ". Check that a GPU is visible to this process (nvidia-smi).");
        }
        int encoded;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
            int r = api.cuDriverGetVersion(out);
            if (r != 0) {
                throw unavailable(library + ": cuDriverGetVersion failed: " + CuResults.name(r));
            }
            encoded = out.get(ValueLayout.JAVA_INT, 0);
        }
        if (encoded < MINIMUM_VERSION) {
            throw unavailable(library + " supports CUDA " + CudaVersion.of(encoded) + "; Gatun needs a driver for CUDA "
                    + CudaVersion.of(MINIMUM_VERSION) + " or newer. Update the NVIDIA driver.");
        }
        Driver driver = new Driver(api, CudaVersion.of(encoded), library);
        // With the log, every call reports its result as it returns, so that its lines are its own.
        return DriverLog.register(driver) ? new Driver(new AttributedDriverApi(api), driver.version, library) : driver;
    }

    /** The process's driver, loaded on first use. */
    public static Driver system() {
        Object state = SystemDriver.STATE;
        if (state instanceof Driver driver) {
            return driver;
        }
        throw ((CudaUnavailableException) state).again();
    }

    /** Whether {@link #system()} would return a driver. Never throws. */
    public static boolean systemAvailable() {
        return SystemDriver.STATE instanceof Driver;
    }

    private static final class SystemDriver {
        // The library the raw bindings call too (SystemLibraries is their provider).
        static final Object STATE = load(() -> SystemLibraries.require(NativeLibrary.DRIVER));
    }

    /**
     * Initializes the driver {@code library} opens: the {@link Driver}, or the
     * {@link CudaUnavailableException} that every caller will get. Never throws: a class
     * initializer must not, or callers would see ExceptionInInitializerError once and
     * NoClassDefFoundError after.
     *
     * @param library supplies the opened driver library, or throws the
     *     {@link CudaUnavailableException} that says why there is none
     */
    static Object load(Supplier<NativeLibrary.Opened> library) {
        try {
            NativeLibrary.Opened opened = library.get();
            return create(new NativeDriverApi(opened.symbols(), opened.origin()), opened.origin());
        } catch (CudaUnavailableException e) {
            return e;
        } catch (RuntimeException | Error e) {
            String message = "loading the CUDA driver failed unexpectedly: " + e;
            return new CudaUnavailableException(message, List.of(message), e);
        }
    }

    private static CudaUnavailableException unavailable(String message) {
        return new CudaUnavailableException(message, List.of(message));
    }

    /** The calls to make: the driver's, each reporting its result to the error log when the driver keeps one. */
    public DriverApi api() {
        return api;
    }

    public CudaVersion version() {
        return version;
    }

    /** Where the driver was loaded from and how it was found. */
    public String library() {
        return library;
    }

    /**
     * Checks that the driver has everything {@code feature} needs: it is at least as new as the
     * feature, and has each of its functions. Operations call this before their first step, so
     * that a driver too old for the feature refuses it before anything happens (a function the
     * driver lacks would also fail its own call, but perhaps after the operation changed
     * something). Takes no lock: safe between making a context current and a call.
     *
     * @throws DriverTooOldException naming the feature, what it needs and the versions
     */
    public void require(DriverFeature feature) {
        int installed = version.encoded();
        if (installed < feature.minimum()) {
            throw feature.tooOld(installed);
        }
        for (DriverFunction f : feature.entryPoints()) {
            String missing = missing(f);
            if (missing != null) {
                throw EntryPoints.tooOld(f, installed, missing + " at " + library);
            }
        }
    }

    /** Whether the driver has everything {@code feature} needs ({@link #require} would pass). Never throws. */
    public boolean supports(DriverFeature feature) {
        if (version.encoded() < feature.minimum()) {
            return false;
        }
        for (DriverFunction f : feature.entryPoints()) {
            if (missing(f) != null) {
                return false;
            }
        }
        return true;
    }

    /** Why the driver cannot call {@code function}, or null when it can. */
    private String missing(DriverFunction function) {
        if (function.byName() || has[function.ordinal()]) {
            return null;
        }
        // Safety: EntryPoints passes a NUL-terminated name and out-parameters of the sizes the driver writes.
        String missing = EntryPoints.missing((symbol, pfn, cudaVersion, flags, status) -> api.cuGetProcAddress_v2(
                symbol, pfn, cudaVersion, flags, status), version.encoded(), function);
        if (missing == null) {
            has[function.ordinal()] = true;
        }
        return missing;
    }

    /** Throws a {@link CudaException} for a failed result; does nothing on success. */
    public void check(int result, String operation, int device) {
        if (result != 0) {
            throw error(result, operation, device);
        }
    }

    /**
     * The typed exception for a failed result, with the driver's own description and the lines it
     * logged during the call that failed with it on this thread ({@code DriverLog}).
     */
    public CudaException error(int result, String operation, int device) {
        // The failed call's lines were set aside as it returned; cuGetErrorString's own, if any,
        // are its own (it succeeds).
        String description = describe(api, result);
        return new CudaException(result, CuResults.name(result), description, operation, device,
                DriverLog.take(result));
    }

    private static String suffixed(String description) {
        return description.isEmpty() ? "" : ": " + description;
    }

    /** The driver's own description of a result ({@code cuGetErrorString}), or "" when it has none. */
    private static String describe(DriverApi api, int result) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            int r;
            try {
                r = api.cuGetErrorString(result, out);
            } catch (GatunException unbound) {
                // Its first call binds it (cuGetProcAddress_v2): on a driver that failed cuInit, or
                // is too old, that can fail too, and the error being described must not be lost.
                return "";
            }
            if (r != 0) {
                return "";
            }
            MemorySegment text = out.get(ValueLayout.ADDRESS, 0);
            // Safety: cuGetErrorString points at a static NUL-terminated string in the driver,
            // which stays mapped for the process.
            return text.equals(MemorySegment.NULL) ? "" : text.reinterpret(1024).getString(0);
        }
    }
}
