package dev.gatun.cuda.profiling.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.bindings.NativeLibrary;
import dev.gatun.cuda.internal.load.LibrarySearch;
import dev.gatun.cuda.internal.load.LibrarySpec;
import dev.gatun.cuda.internal.load.SystemLibraries;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.List;

/**
 * The CUPTI activity functions this module calls, from {@code cupti_activity.h} and
 * {@code cupti_version.h} of CUDA 13.0, found and opened once per class loader as gatun-core
 * opens the driver ({@link SystemLibraries}): an override ({@code -Dgatun.cupti} or
 * {@code GATUN_CUPTI}), then the toolkit's directories, then the dynamic loader.
 */
public final class Cupti {

    /** {@code CUPTI_SUCCESS}. */
    public static final int SUCCESS = 0;
    /** {@code CUPTI_ERROR_MAX_LIMIT_REACHED}: {@code cuptiActivityGetNextRecord} at a buffer's end. */
    public static final int MAX_LIMIT_REACHED = 12;
    /** {@code CUPTI_ACTIVITY_FLAG_FLUSH_FORCED}: flush buffers that are not full too. */
    public static final int FLUSH_FORCED = 1;
    /**
     * The oldest library whose records have the layouts of {@link ActivityRecords}: CUPTI 13's
     * {@code CUPTI_API_VERSION} is 130001 (cupti_version.h:126), and older libraries number
     * their API 1 to 26.
     */
    public static final int FIRST_VERSION = 130000;

    private static final Object STATE = SystemLibraries.open(LibrarySearch.ofProcess(), spec());

    private static LibrarySpec spec() {
        List<LibrarySpec.Step> steps = new ArrayList<>(
                LibrarySpec.Step.inToolkitHomes(System::getenv, "lib64", "extras/CUPTI/lib64"));
        steps.add(LibrarySpec.Step.directory("/usr/local/cuda/lib64"));
        steps.add(LibrarySpec.Step.directory("/usr/local/cuda/extras/CUPTI/lib64"));
        steps.add(LibrarySpec.Step.dynamicLoader());
        return new LibrarySpec("CUPTI", "CUPTI", "gatun.cupti", "GATUN_CUPTI", List.of("libcupti.so.13"), steps,
                "cuptiActivityRegisterCallbacks",
                "Install the CUDA toolkit's CUPTI 13 (libcupti.so.13, e.g. the cuda-cupti-13-0 package), set CUDA_HOME "
                        + "to the toolkit, or point Gatun at it with -Dgatun.cupti=/path/to/libcupti.so.13 or GATUN_CUPTI.");
    }

    private static final MethodHandle GET_VERSION = function("cuptiGetVersion", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    private static final MethodHandle ENABLE = function("cuptiActivityEnable", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle DISABLE = function("cuptiActivityDisable",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle REGISTER_CALLBACKS = function("cuptiActivityRegisterCallbacks",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    private static final MethodHandle GET_NEXT_RECORD = function("cuptiActivityGetNextRecord",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, ADDRESS));
    private static final MethodHandle FLUSH_ALL = function("cuptiActivityFlushAll",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT));

    private Cupti() {
    }

    private static MethodHandle function(String name, FunctionDescriptor descriptor) {
        if (!(STATE instanceof NativeLibrary.Opened opened)) {
            return null;
        }
        SymbolLookup symbols = opened.symbols();
        // Safety: each descriptor is the function's prototype in cupti_activity.h / cupti_version.h
        // (CUptiResult and the enums are C ints, size_t is 64-bit, pointers are addresses).
        return symbols.find(name).map(a -> Linker.nativeLinker().downcallHandle(a, descriptor)).orElse(null);
    }

    /**
     * Throws when CUPTI could not be opened, listing every place tried.
     *
     * @throws CudaUnavailableException with the search's report and what to install
     */
    public static void require() {
        if (STATE instanceof CudaUnavailableException e) {
            throw e.again();
        }
    }

    public static int version(MemorySegment out) throws Throwable {
        return (int) GET_VERSION.invokeExact(out);
    }

    public static int enable(int kind) throws Throwable {
        return (int) ENABLE.invokeExact(kind);
    }

    public static int disable(int kind) throws Throwable {
        return (int) DISABLE.invokeExact(kind);
    }

    public static int registerCallbacks(MemorySegment requested, MemorySegment completed) throws Throwable {
        return (int) REGISTER_CALLBACKS.invokeExact(requested, completed);
    }

    public static int nextRecord(MemorySegment buffer, long validBytes, MemorySegment record) throws Throwable {
        return (int) GET_NEXT_RECORD.invokeExact(buffer, validBytes, record);
    }

    public static int flushAll(int flag) throws Throwable {
        return (int) FLUSH_ALL.invokeExact(flag);
    }
}
