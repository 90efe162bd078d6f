package dev.gatun.cuda.blas.internal.load;

import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.bindings.NativeLibrary;
import dev.gatun.cuda.internal.load.LibrarySearch;
import dev.gatun.cuda.internal.load.LibrarySpec;
import dev.gatun.cuda.internal.load.SystemLibraries;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * The libraries of this module's generated bindings, and the one place their symbols resolve:
 * every generated function's handle is {@link #downcall}, every {@code $address()} is
 * {@link #address}, each header class's {@code SYMBOL_LOOKUP} is {@link #lookup()}
 * ({@code runtime-blas/jextract/regenerate} routes them here with cuda-bindings'
 * {@code RouteSymbols.java}).
 *
 * <p>Each library is searched for and opened once per class loader, on the first call that needs
 * it, with runtime-core's own search (override, directories, dynamic loader; every attempt in the
 * failure): never from a class initializer that could fail (a missing library is a
 * {@link CudaUnavailableException} from every call that needs it, never an
 * ExceptionInInitializerError). cuBLASLt is opened before cuBLAS, which imports it: the dynamic
 * loader then binds cuBLAS to the cuBLASLt already mapped, and cuBLAS is refused, naming
 * cuBLASLt, when cuBLASLt cannot be opened. Versions are checked above the seam
 * ({@code BlasVersions}), where the simulated libraries can report any.
 */
public enum BlasLibrary {

    /** cuBLASLt ({@code libcublasLt.so.13}). */
    CUBLASLT(BlasLibrarySpecs::cublasLt),
    /** cuBLAS ({@code libcublas.so.13}), after cuBLASLt. */
    CUBLAS(BlasLibrarySpecs::cublas),
    /** cuDNN ({@code libcudnn.so.9}, which loads its sublibraries itself). */
    CUDNN(BlasLibrarySpecs::cudnn);

    private final Function<UnaryOperator<String>, LibrarySpec> spec;

    BlasLibrary(Function<UnaryOperator<String>, LibrarySpec> spec) {
        this.spec = spec;
    }

    /** {@return where this library is looked for, with {@code environment} read for CUDA_HOME / CUDA_PATH} */
    public LibrarySpec spec(UnaryOperator<String> environment) {
        return spec.apply(environment);
    }

    /**
     * The library, opened on first use.
     *
     * @return the opened library
     * @throws CudaUnavailableException listing every place tried (for cuBLAS without cuBLASLt:
     *     cuBLASLt's), a new one on every call
     */
    public NativeLibrary.Opened open() {
        Object state = switch (this) {
            case CUBLASLT -> Lt.STATE;
            case CUBLAS -> Blas.STATE;
            case CUDNN -> Dnn.STATE;
        };
        if (state instanceof NativeLibrary.Opened opened) {
            return opened;
        }
        throw ((CudaUnavailableException) state).again();
    }

    /** {@return a lookup in this library that opens it on its first {@code find}} */
    public SymbolLookup lookup() {
        return name -> open().symbols().find(name);
    }

    /**
     * A downcall handle for {@code function}, bound on its first call (see
     * {@link NativeLibrary#downcall(Supplier, String, FunctionDescriptor)}).
     *
     * @param function the symbol
     * @param descriptor its C prototype, as jextract read it from the header
     * @return the handle
     */
    public MethodHandle downcall(String function, FunctionDescriptor descriptor) {
        return NativeLibrary.downcall(this::open, function, descriptor);
    }

    /**
     * The address of {@code function} in this library.
     *
     * @param function the symbol
     * @return its address
     * @throws CudaUnavailableException when the library cannot be opened
     * @throws UnsupportedOperationException when it does not export {@code function}
     */
    public MemorySegment address(String function) {
        NativeLibrary.Opened library = open();
        return library.symbols().find(function).orElseThrow(() -> new UnsupportedOperationException(function
                + " is not exported by " + library.origin() + ": the installed library predates it"));
    }

    /**
     * Opens {@code library} with {@code search}: the library, or the exception every user of it
     * gets. cuBLAS first needs {@code lt}, the state of cuBLASLt's search. Never throws.
     */
    static Object open(BlasLibrary library, LibrarySearch search, UnaryOperator<String> environment,
            Object lt) {
        if (library == CUBLAS && lt instanceof CudaUnavailableException missing) {
            return new CudaUnavailableException("cuBLAS was not loaded: it imports cuBLASLt, which could not be "
                    + "loaded:\n" + missing.getMessage(), missing.attempts());
        }
        return SystemLibraries.open(search, library.spec(environment));
    }

    private static final class Lt {
        static final Object STATE = open(CUBLASLT, LibrarySearch.ofProcess(), System::getenv, null);
    }

    private static final class Blas {
        // Lt.STATE first: cuBLASLt is mapped before cuBLAS is opened.
        static final Object STATE = open(CUBLAS, LibrarySearch.ofProcess(), System::getenv, Lt.STATE);
    }

    private static final class Dnn {
        static final Object STATE = open(CUDNN, LibrarySearch.ofProcess(), System::getenv, null);
    }
}
