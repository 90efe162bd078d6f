package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** Runs without a GPU: reading the path out of the loader's descriptions. */
class LoadedLibraryTest {

    @Test
    void pathEndsAtTheFirstParenthesis() {
        assertEquals(Path.of("/lib/x86_64-linux-gnu/libcuda.so.1"),
                LoadedLibrary.path("/lib/x86_64-linux-gnu/libcuda.so.1 (dynamic loader (libcuda.so.1))"));
        assertEquals(Path.of("/usr/local/cuda/lib64/libnvrtc.so.13"),
                LoadedLibrary.path("/usr/local/cuda/lib64/libnvrtc.so.13 (directory /usr/local/cuda/lib64)"));
    }

    @Test
    void rejectsARelativePath() {
        assertThrows(IllegalArgumentException.class, () -> LoadedLibrary.path("libcuda.so.1 (dynamic loader)"));
    }
}
