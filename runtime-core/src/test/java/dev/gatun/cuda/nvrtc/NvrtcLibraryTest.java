package dev.gatun.cuda.nvrtc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.bindings.nvrtc.Nvrtc;
import dev.gatun.cuda.testing.FakeNvrtcApi;
import org.junit.jupiter.api.Test;

class NvrtcLibraryTest {

    @Test
    void theVersionComesFromNvrtcVersion() {
        NvrtcLibrary library = NvrtcLibrary.create(new FakeNvrtcApi(12, 8), "/opt/libnvrtc.so.12 (test)");
        assertEquals("12.8", library.version());
        assertEquals(12, library.majorVersion());
        assertEquals(8, library.minorVersion());
        assertEquals("/opt/libnvrtc.so.12 (test)", library.library());
    }

    @Test
    void aFailingNvrtcVersionMakesNvrtcUnavailableWithTheResultName() {
        FakeNvrtcApi broken = new FakeNvrtcApi().failing("nvrtcVersion", Nvrtc.NVRTC_ERROR_INTERNAL_ERROR());
        CudaUnavailableException e = assertThrows(CudaUnavailableException.class,
                () -> NvrtcLibrary.create(broken, "/opt/libnvrtc.so.13"));
        assertTrue(e.getMessage().contains("/opt/libnvrtc.so.13") && e.getMessage().contains("NVRTC_ERROR_INTERNAL_ERROR"),
                e.getMessage());
    }

    @Test
    void anNvrtcOlderThan12IsRefusedWithWhatToDo() {
        CudaUnavailableException e = assertThrows(CudaUnavailableException.class,
                () -> NvrtcLibrary.create(new FakeNvrtcApi(11, 8), "/usr/lib/libnvrtc.so"));
        assertTrue(e.getMessage().contains("NVRTC 11.8") && e.getMessage().contains("gatun.nvrtc"), e.getMessage());
    }

    @Test
    void aCompilerFromTheLibraryUsesItsVersionAndTheGivenCache() {
        NvrtcCompiler compiler = NvrtcLibrary.create(new FakeNvrtcApi(13, 1), "fake").compiler(KernelCache.disabled());
        assertEquals("13.1", compiler.nvrtcVersion());
        assertEquals(KernelCache.disabled(), compiler.cache());
    }

    @Test
    void anUnexpectedFailureWhileLoadingKeepsItsCause() {
        IllegalStateException failure = new IllegalStateException("the loader broke");
        Object state = NvrtcLibrary.load(() -> {
            throw failure;
        });
        CudaUnavailableException e = assertInstanceOf(CudaUnavailableException.class, state);
        assertTrue(e.getMessage().startsWith("loading NVRTC failed unexpectedly"), e.getMessage());
        assertSame(failure, e.getCause());
        assertSame(failure, e.again().getCause());
    }
}
