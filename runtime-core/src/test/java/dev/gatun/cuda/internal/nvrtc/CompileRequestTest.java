package dev.gatun.cuda.internal.nvrtc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.nvrtc.CompileOptions;
import dev.gatun.cuda.nvrtc.CompileTarget;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

class CompileRequestTest {

    private static final List<Path> TOOLKIT = List.of(Path.of("/usr/local/cuda/include"));

    @Test
    void argumentsAreArchitectureThenCallerIncludesThenToolkitIncludesThenCallerOptionsInOrder() {
        CompileOptions options = CompileOptions.builder(CompileTarget.cubin(9, 0))
                .options("-std=c++17", "--use_fast_math")
                .includeDirectory(Path.of("/work/include"))
                .options("-lineinfo", "-DTILE=64")
                .includeDirectory(Path.of("/work/third_party"))
                .build();
        CompileRequest request = new CompileRequest("", options, TOOLKIT, "13.0");
        assertEquals(List.of("--gpu-architecture=sm_90", "-I/work/include", "-I/work/third_party", "-I/usr/local/cuda/include",
                "-std=c++17", "--use_fast_math", "-lineinfo", "-DTILE=64"), request.arguments());
        assertEquals(List.of(Path.of("/work/include"), Path.of("/work/third_party"), Path.of("/usr/local/cuda/include")),
                request.includeDirectories());
    }

    @Test
    void aDirectoryGivenByTheCallerAndFoundInTheToolkitIsPassedOnce() {
        CompileOptions options = CompileOptions.builder(CompileTarget.ptx(8, 6))
                .includeDirectory(Path.of("/usr/local/cuda/include")).build();
        assertEquals(List.of("--gpu-architecture=compute_86", "-I/usr/local/cuda/include"),
                new CompileRequest("", options, TOOLKIT, "13.0").arguments());
        CompileRequest request = new CompileRequest("", options, TOOLKIT, "13.0");
        assertEquals(TOOLKIT, request.callerIncludeDirectories());
        assertEquals(List.of(), request.toolkitIncludeDirectories(), "the key reads it as the caller's, by content");
    }

    @Test
    void aSourceWithANulCharacterIsRefusedWithItsPosition() {
        CompileOptions options = CompileOptions.of(CompileTarget.ptx(9, 0));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new CompileRequest("__global__ void k() {}\0 tail", options, TOOLKIT, "13.0"));
        assertTrue(e.getMessage().contains("index 22"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new CompileRequest(null, options, TOOLKIT, "13.0"));
    }
}
