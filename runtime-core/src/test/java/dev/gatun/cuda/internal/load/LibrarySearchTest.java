package dev.gatun.cuda.internal.load;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class LibrarySearchTest {

    /** Records every load attempt; succeeds only for the files and sonames it is told about. */
    private static final class ScriptedLinkage implements Linkage {
        final Set<Path> loadableFiles = new HashSet<>();
        final Map<String, Path> loadableNames = new HashMap<>();
        final List<String> tried = new ArrayList<>();

        @Override
        public Outcome loadFile(Path path) {
            tried.add("file " + path);
            return loadableFiles.contains(path) ? Outcome.loaded(path) : Outcome.failed("invalid ELF header");
        }

        @Override
        public Outcome loadByName(String soname, String probeSymbol) {
            tried.add("name " + soname);
            Path p = loadableNames.get(soname);
            return p != null ? Outcome.loaded(p) : Outcome.failed("cannot open shared object file");
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
        assertEquals("/usr/local/nvidia/lib64/libcuda.so.1: no such file", r.attempts().get(1));
        assertEquals("/usr/lib/wsl/lib/libcuda.so.1: no such file", r.attempts().get(4));
        String message = CudaLibraries.diagnosis(CudaLibraries.DRIVER, r.attempts());
        assertTrue(message.contains("/usr/lib64/libcuda.so.1: no such file"), message);
        assertTrue(message.contains("GATUN_CUDA_DRIVER"), message);
        assertTrue(message.contains("Install the NVIDIA GPU driver"), message);
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
        assertEquals(List.of("/opt/broken/libcuda.so.1: invalid ELF header"), r.attempts());
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
        assertEquals(List.of("/opt/cuda/lib/libnvrtc.so.13: no such file"), r.attempts());
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
        assertEquals("/opt/cuda-13/lib64/libnvrtc.so.13: no such file", r.attempts().get(0));
        assertEquals("/usr/local/cuda/lib64/libnvrtc.so.13: no such file", r.attempts().get(3));
        assertEquals(List.of("name libnvrtc.so.13", "name libnvrtc.so.12", "name libnvrtc.so"), linkage.tried);
    }
}
