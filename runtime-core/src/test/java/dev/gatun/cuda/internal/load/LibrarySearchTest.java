package dev.gatun.cuda.internal.load;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.bindings.NativeLibrary;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

class LibrarySearchTest {

    /**
     * Records every open; opens only the files and sonames it is told about, as libraries that
     * export the probe symbols (at an address that stands for the file, for dladdr), unless told
     * that a library is some other one.
     */
    private static final class ScriptedLinkage implements Linkage {
        final Set<Path> loadableFiles = new HashSet<>();
        final Map<String, Path> loadableNames = new HashMap<>();
        final Set<Path> foreign = new HashSet<>();
        final List<Path> mapped = new ArrayList<>();
        final List<String> tried = new ArrayList<>();

        @Override
        public Opened open(Path path) {
            tried.add("file " + path);
            return loadableFiles.contains(path) ? Opened.library(library(path))
                    : Opened.failed("is not a loadable shared library: invalid ELF header");
        }

        @Override
        public Opened open(String soname) {
            tried.add("name " + soname);
            Path p = loadableNames.get(soname);
            return p != null ? Opened.library(library(p)) : Opened.failed(soname + ": cannot open shared object file");
        }

        @Override
        public Optional<Path> fileOf(MemorySegment symbol) {
            return Optional.of(mapped.get((int) symbol.address() - 1));
        }

        private SymbolLookup library(Path file) {
            if (foreign.contains(file)) {
                return name -> Optional.empty();
            }
            mapped.add(file);
            MemorySegment symbol = MemorySegment.ofAddress(mapped.size());
            return name -> Set.of("cuInit", "nvrtcVersion").contains(name) ? Optional.of(symbol) : Optional.empty();
        }
    }

    private static final class Files implements LibrarySearch.FileCheck {
        final Set<Path> files = new HashSet<>();
        final Set<Path> dirs = new HashSet<>();

        @Override
        public boolean isRegularFile(Path path) {
            return files.contains(path);
        }

        @Override
        public boolean isDirectory(Path path) {
            return dirs.contains(path);
        }
    }

    private final ScriptedLinkage linkage = new ScriptedLinkage();
    private final Files files = new Files();
    private final Map<String, String> env = new HashMap<>();
    private final Map<String, String> props = new HashMap<>();

    private LibrarySearch.Result find(LibrarySpec spec) {
        return new LibrarySearch(linkage, env::get, props::get, files).find(spec);
    }

    @Test
    void withNothingInstalledEveryPlaceIsTriedInOrderAndReported() {
        LibrarySearch.Result r = find(CudaLibraries.DRIVER);
        assertFalse(r.found());
        assertEquals(List.of("name libcuda.so.1"), linkage.tried, "absent files are not even opened");
        assertEquals(5, r.attempts().size());
        assertTrue(r.attempts().get(0).startsWith("libcuda.so.1 via the dynamic loader"), r.attempts().get(0));
        assertEquals("/usr/local/nvidia/lib64/libcuda.so.1 does not exist", r.attempts().get(1));
        assertEquals("/usr/lib/wsl/lib/libcuda.so.1 does not exist", r.attempts().get(4));
        String message = CudaLibraries.unavailable(CudaLibraries.DRIVER, r).getMessage();
        assertTrue(message.startsWith("No CUDA driver could be loaded."), message);
        assertTrue(message.contains("/usr/lib64/libcuda.so.1 does not exist"), message);
        assertTrue(message.contains("GATUN_CUDA_DRIVER"), message);
        assertTrue(message.contains("Install the NVIDIA GPU driver"), message);
    }

    @Test
    void systemLibrariesHandOnTheLibraryFoundWithWhereItCameFrom() {
        linkage.loadableNames.put("libcuda.so.1", Path.of("/lib/x86_64-linux-gnu/libcuda.so.1"));
        Object state = SystemLibraries.open(new LibrarySearch(linkage, env::get, props::get, files), CudaLibraries.DRIVER);
        NativeLibrary.Opened opened = assertInstanceOf(NativeLibrary.Opened.class, state);
        assertEquals("/lib/x86_64-linux-gnu/libcuda.so.1 (dynamic loader (libcuda.so.1))", opened.origin());
        assertTrue(opened.symbols().find("cuInit").isPresent());
    }

    @Test
    void systemLibrariesHandOnTheReportOfASearchThatFoundNothing() {
        LibrarySpec nvrtc = CudaLibraries.nvrtc(name -> null);
        Object state = SystemLibraries.open(new LibrarySearch(linkage, env::get, props::get, files), nvrtc);
        CudaUnavailableException e = assertInstanceOf(CudaUnavailableException.class, state);
        assertEquals(CudaLibraries.unavailable(nvrtc, find(nvrtc)).getMessage(), e.getMessage());
        assertTrue(e.getMessage().contains("/usr/local/cuda/lib64/libnvrtc.so.13 does not exist"), e.getMessage());
    }

    @Test
    void theDynamicLoaderComesBeforeKnownDirectories() {
        linkage.loadableNames.put("libcuda.so.1", Path.of("/lib/x86_64-linux-gnu/libcuda.so.1"));
        files.files.add(Path.of("/usr/local/nvidia/lib64/libcuda.so.1"));
        linkage.loadableFiles.add(Path.of("/usr/local/nvidia/lib64/libcuda.so.1"));
        LibrarySearch.Result r = find(CudaLibraries.DRIVER);
        assertEquals(Path.of("/lib/x86_64-linux-gnu/libcuda.so.1"), r.path());
        assertEquals("dynamic loader (libcuda.so.1)", r.how());
    }

    @Test
    void aKnownDirectoryIsUsedWhenTheDynamicLoaderFails() {
        Path wsl = Path.of("/usr/lib/wsl/lib/libcuda.so.1");
        files.files.add(wsl);
        linkage.loadableFiles.add(wsl);
        LibrarySearch.Result r = find(CudaLibraries.DRIVER);
        assertEquals(wsl, r.path());
        assertEquals("directory /usr/lib/wsl/lib", r.how());
        assertEquals(4, r.attempts().size(), "the four failures before it are kept for diagnosis");
    }

    @Test
    void thePropertyOverridesTheEnvironmentAndNothingElseIsTried() {
        Path custom = Path.of("/opt/driver/libcuda.so.1");
        files.files.add(custom);
        linkage.loadableFiles.add(custom);
        props.put("gatun.cuda.driver", custom.toString());
        env.put("GATUN_CUDA_DRIVER", "/elsewhere/libcuda.so.1");
        LibrarySearch.Result r = find(CudaLibraries.DRIVER);
        assertEquals(custom, r.path());
        assertEquals("system property gatun.cuda.driver", r.how());
        assertEquals(List.of("file " + custom), linkage.tried);
    }

    @Test
    void aFailingOverrideDoesNotFallBackToAnotherLibrary() {
        env.put("GATUN_CUDA_DRIVER", "/opt/broken/libcuda.so.1");
        files.files.add(Path.of("/opt/broken/libcuda.so.1"));
        linkage.loadableNames.put("libcuda.so.1", Path.of("/lib/libcuda.so.1"));
        LibrarySearch.Result r = find(CudaLibraries.DRIVER);
        assertFalse(r.found());
        assertEquals(List.of("/opt/broken/libcuda.so.1 is not a loadable shared library: invalid ELF header"),
                r.attempts());
    }

    @Test
    void aDirectoryOverrideTriesEverySonameInOrder() {
        env.put("GATUN_NVRTC", "/opt/cuda/lib");
        files.dirs.add(Path.of("/opt/cuda/lib"));
        Path twelve = Path.of("/opt/cuda/lib/libnvrtc.so.12");
        files.files.add(twelve);
        linkage.loadableFiles.add(twelve);
        LibrarySearch.Result r = find(CudaLibraries.nvrtc(env::get));
        assertEquals(twelve, r.path());
        assertEquals(List.of("/opt/cuda/lib/libnvrtc.so.13 does not exist"), r.attempts());
    }

    @Test
    void relativeOverridesAreRejectedWithAReason() {
        props.put("gatun.cuda.driver", "lib/libcuda.so.1");
        LibrarySearch.Result r = find(CudaLibraries.DRIVER);
        assertFalse(r.found());
        assertTrue(r.attempts().get(0).contains("not an absolute path"), r.attempts().get(0));
    }

    @Test
    void nvrtcIsLookedForUnderCudaHomeThenTheDefaultToolkitThenTheLoader() {
        env.put("CUDA_HOME", "/opt/cuda-13");
        LibrarySearch.Result r = find(CudaLibraries.nvrtc(env::get));
        assertFalse(r.found());
        assertEquals("/opt/cuda-13/lib64/libnvrtc.so.13 does not exist", r.attempts().get(0));
        assertEquals("/usr/local/cuda/lib64/libnvrtc.so.13 does not exist", r.attempts().get(3));
        assertEquals(List.of("name libnvrtc.so.13", "name libnvrtc.so.12", "name libnvrtc.so"), linkage.tried);
    }

    @Test
    void anOverrideNamingAnotherLibraryIsReportedAsNotTheDriverWithItsPropertyAndNoAdviceToSetIt() {
        Path zlib = Path.of("/usr/lib/libz.so.1");
        files.files.add(zlib);
        linkage.loadableFiles.add(zlib);
        linkage.foreign.add(zlib);
        props.put("gatun.cuda.driver", zlib.toString());
        LibrarySearch.Result r = find(CudaLibraries.DRIVER);
        assertFalse(r.found());
        assertEquals("system property gatun.cuda.driver", r.override());
        assertEquals(List.of("/usr/lib/libz.so.1 is not the CUDA driver: it has no cuInit"), r.attempts());
        String message = CudaLibraries.unavailable(CudaLibraries.DRIVER, r).getMessage();
        assertTrue(message.startsWith("The CUDA driver named by system property gatun.cuda.driver could not be "
                + "loaded:\n  - /usr/lib/libz.so.1 is not the CUDA driver: it has no cuInit\n"), message);
        assertTrue(message.contains("Correct or remove system property gatun.cuda.driver"), message);
        assertFalse(message.contains("-Dgatun.cuda.driver="), message);
        assertFalse(message.contains(CudaLibraries.DRIVER.installHint()), message);
    }

    @Test
    void aFailedEnvironmentOverrideNamesTheVariableAndWhatIsWrongWithEachPath() {
        env.put("GATUN_NVRTC", "/opt/cuda/lib");
        files.dirs.add(Path.of("/opt/cuda/lib"));
        files.files.add(Path.of("/opt/cuda/lib/libnvrtc.so.12"));
        files.dirs.add(Path.of("/opt/cuda/lib/libnvrtc.so"));
        LibrarySpec nvrtc = CudaLibraries.nvrtc(env::get);
        LibrarySearch.Result r = find(nvrtc);
        assertFalse(r.found());
        assertEquals(List.of("/opt/cuda/lib/libnvrtc.so.13 does not exist",
                "/opt/cuda/lib/libnvrtc.so.12 is not a loadable shared library: invalid ELF header",
                "/opt/cuda/lib/libnvrtc.so is not a regular file"), r.attempts());
        String message = CudaLibraries.unavailable(nvrtc, r).getMessage();
        assertTrue(message.startsWith("NVRTC named by environment variable GATUN_NVRTC could not be loaded:"), message);
        assertTrue(message.contains("Correct or remove environment variable GATUN_NVRTC"), message);
        assertFalse(message.contains("gatun.nvrtc"), "no advice to set the property: " + message);
    }

    @Test
    void aLibraryTheDynamicLoaderFindsMustExportTheProbeSymbol() {
        linkage.loadableNames.put("libcuda.so.1", Path.of("/opt/other/libcuda.so.1"));
        linkage.foreign.add(Path.of("/opt/other/libcuda.so.1"));
        Path nvidia = Path.of("/usr/local/nvidia/lib64/libcuda.so.1");
        files.files.add(nvidia);
        linkage.loadableFiles.add(nvidia);
        LibrarySearch.Result r = find(CudaLibraries.DRIVER);
        assertEquals(nvidia, r.path());
        assertEquals(List.of("libcuda.so.1 via the dynamic loader is not the CUDA driver: it has no cuInit"),
                r.attempts());
    }
}
