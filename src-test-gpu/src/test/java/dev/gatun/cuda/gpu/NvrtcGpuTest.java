package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.junit.RequiresGpu;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;

/** NVRTC, which the GPU suite's kernels are compiled with, is found on the GPU host. */
@RequiresGpu
class NvrtcGpuTest {

    @Test
    void nvrtcLoadsAndIsCuda12OrNewer(TestReporter reporter) {
        // system() rather than isAvailable(): on failure its exception lists every path tried.
        NvrtcLibrary nvrtc = assertDoesNotThrow(NvrtcLibrary::system, "NVRTC must load on a GPU host");
        reporter.publishEntry("nvrtc", nvrtc.version() + " from " + nvrtc.library());
        assertAll(
                () -> assertTrue(NvrtcLibrary.isAvailable(), "isAvailable() agrees with system()"),
                () -> assertTrue(nvrtc.majorVersion() >= 12, () -> "NVRTC " + nvrtc.version()));
    }

    @Test
    void nvrtcWasLoadedFromLibnvrtc() {
        String described = assertDoesNotThrow(NvrtcLibrary::system, "NVRTC must load on a GPU host").library();
        Path library = LoadedLibrary.path(described);
        assertAll(described,
                () -> assertTrue(library.getFileName().toString().startsWith("libnvrtc.so"), "file name"),
                () -> assertTrue(Files.isRegularFile(library), "file exists"));
    }
}
