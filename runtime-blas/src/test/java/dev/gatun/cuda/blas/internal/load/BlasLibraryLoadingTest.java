package dev.gatun.cuda.blas.internal.load;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.internal.load.LibrarySearch;
import dev.gatun.cuda.internal.load.Linkage;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Where cuBLASLt, cuBLAS and cuDNN are looked for, on a machine where none is found (the loader
 * refuses every name, no file exists): every place tried is named, cuBLAS is refused naming
 * cuBLASLt, and an override is tried alone.
 */
class BlasLibraryLoadingTest {

    /** A dynamic loader that opens nothing. */
    private static final Linkage NOTHING = new Linkage() {
        @Override
        public Opened open(Path path) {
            return Opened.failed("cannot be opened");
        }

        @Override
        public Opened open(String soname) {
            return Opened.failed(soname + ": cannot open shared object file: No such file or directory");
        }

        @Override
        public Optional<Path> fileOf(MemorySegment symbol) {
            return Optional.empty();
        }
    };

    private static final LibrarySearch.FileCheck NO_FILES = new LibrarySearch.FileCheck() {
        @Override
        public boolean isRegularFile(Path path) {
            return false;
        }

        @Override
        public boolean isDirectory(Path path) {
            return false;
        }
    };

    private static CudaUnavailableException missing(BlasLibrary library, Map<String, String> environment,
            Map<String, String> properties, Object lt) {
        LibrarySearch search = new LibrarySearch(NOTHING, environment::get, properties::get, NO_FILES);
        return assertInstanceOf(CudaUnavailableException.class, BlasLibrary.open(library, search, environment::get, lt));
    }

    @Test
    void aMissingCublasLtNamesEveryPlaceTriedInOrder() {
        CudaUnavailableException e = missing(BlasLibrary.CUBLASLT, Map.of("CUDA_HOME", "/opt/cuda"), Map.of(), null);
        assertEquals(List.of("/opt/cuda/lib64/libcublasLt.so.13 does not exist",
                "/usr/local/cuda/lib64/libcublasLt.so.13 does not exist",
                "/usr/local/cuda/targets/x86_64-linux/lib/libcublasLt.so.13 does not exist",
                "/usr/lib/x86_64-linux-gnu/libcublasLt.so.13 does not exist",
                "libcublasLt.so.13 via the dynamic loader: libcublasLt.so.13: cannot open shared object file: No such "
                        + "file or directory"), e.attempts());
        assertTrue(e.getMessage().startsWith("No cuBLASLt could be loaded. Tried:"), e.getMessage());
        assertTrue(e.getMessage().contains("-Dgatun.cublaslt="), "it says how to point Gatun at it: " + e.getMessage());
    }

    @Test
    void cublasIsRefusedNamingCublasLtWhichItImports() {
        CudaUnavailableException lt = missing(BlasLibrary.CUBLASLT, Map.of(), Map.of(), null);
        CudaUnavailableException e = missing(BlasLibrary.CUBLAS, Map.of(), Map.of(), lt);
        assertTrue(e.getMessage().startsWith("cuBLAS was not loaded: it imports cuBLASLt, which could not be loaded"),
                e.getMessage());
        assertEquals(lt.attempts(), e.attempts());
    }

    @Test
    void anOverrideIsTriedAloneAndNamedInTheFailure() {
        CudaUnavailableException e = missing(BlasLibrary.CUDNN, Map.of(), Map.of("gatun.cudnn", "/nowhere/libcudnn.so.9"),
                null);
        assertEquals(List.of("/nowhere/libcudnn.so.9 does not exist"), e.attempts());
        assertTrue(e.getMessage().contains("named by system property gatun.cudnn could not be loaded"),
                e.getMessage());
    }
}
