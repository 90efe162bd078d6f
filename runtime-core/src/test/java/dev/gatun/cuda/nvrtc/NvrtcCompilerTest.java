package dev.gatun.cuda.nvrtc;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.bindings.nvrtc.Nvrtc;
import dev.gatun.cuda.internal.nvrtc.NvrtcProgram;
import dev.gatun.cuda.testing.FakeNvrtcApi;
import dev.gatun.cuda.testing.LogCapture;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.slf4j.event.Level;

/** The compiler over a simulated NVRTC, without a cache (see NvrtcCompilerCacheTest for that). */
class NvrtcCompilerTest {

    static final List<Path> TOOLKIT = List.of(Path.of("/usr/local/cuda/include"));
    static final String SOURCE = "extern \"C\" __global__ void fill(float *out) { out[threadIdx.x] = 1.0f; }\n";

    private final FakeNvrtcApi fake = new FakeNvrtcApi();
    private final NvrtcCompiler compiler = NvrtcLibrary.create(fake, "fake").compiler(KernelCache.disabled(), TOOLKIT);

    @Test
    void ptxIsTheTextWithoutItsNulAndNvrtcGetsTheArchitectureIncludesAndOptionsInOrder() {
        CompileOptions options = CompileOptions.builder(CompileTarget.ptx(9, 0)).programName("fill.cu")
                .includeDirectory(Path.of("/project/include")).options("-std=c++17", "-lineinfo").build();
        CompiledProgram program = compiler.compile(SOURCE, options);

        List<String> expected = List.of("--gpu-architecture=compute_90", "-I/project/include", "-I/usr/local/cuda/include",
                "-std=c++17", "-lineinfo");
        assertEquals(expected, fake.lastOptions());
        assertEquals(FakeNvrtcApi.ptxFor(SOURCE, expected), new String(program.image(), StandardCharsets.UTF_8));
        assertEquals(CompileTarget.Kind.PTX, program.kind());
        assertEquals("compute_90", program.architecture());
        assertEquals("fill.cu", program.programName());
        assertEquals("13.0", program.nvrtcVersion());
        assertEquals(0, fake.livePrograms(), "the NVRTC program was not destroyed");
    }

    @Test
    void aCubinKeepsEveryByteIncludingNuls() {
        CompiledProgram program = compiler.compile(SOURCE, CompileOptions.of(CompileTarget.cubin(8, 9)));
        assertArrayEquals(FakeNvrtcApi.cubinFor(SOURCE, List.of("--gpu-architecture=sm_89", "-I/usr/local/cuda/include")),
                program.image());
        assertEquals("sm_89", program.architecture());
    }

    @Test
    void theWarningLogIsKept() {
        fake.warningLog("kernel.cu(1): warning #177-D: variable \"x\" was declared but never referenced\n");
        assertEquals("kernel.cu(1): warning #177-D: variable \"x\" was declared but never referenced\n",
                compiler.compile(SOURCE, CompileOptions.of(CompileTarget.ptx(9, 0))).log());
    }

    @Test
    void aFailedCompileCarriesTheFullLogTheResultAndTheOptions() {
        StringBuilder source = new StringBuilder();
        for (int i = 0; i < 300; i++) {
            source.append("#error problem number ").append(i).append('\n');
        }
        CompileOptions options = CompileOptions.builder(CompileTarget.cubin(9, 0)).programName("broken.cu")
                .options("-std=c++17").build();
        CompilationException e = assertThrows(CompilationException.class,
                () -> compiler.compile(source.toString(), options));

        String log = FakeNvrtcApi.errorLogFor("broken.cu", source.toString());
        assertTrue(log.length() > 10_000, "the log should be long enough to catch truncation");
        assertEquals(log, e.log());
        assertTrue(e.getMessage().contains(log), "the message must hold the whole log");
        assertEquals(Nvrtc.NVRTC_ERROR_COMPILATION(), e.result());
        assertEquals("NVRTC_ERROR_COMPILATION", e.resultName());
        assertTrue(e.getMessage().contains("NVRTC_ERROR_COMPILATION (6)"), e.getMessage());
        assertEquals("broken.cu", e.programName());
        assertEquals(List.of("--gpu-architecture=sm_90", "-I/usr/local/cuda/include", "-std=c++17"), e.options());
        assertTrue(e.getMessage().contains("--gpu-architecture=sm_90"), e.getMessage());
        assertEquals(0, fake.livePrograms(), "a failed compile must still destroy its program");
    }

    @Test
    void aRefusedOptionIsReportedAsSuch() {
        CompilationException e = assertThrows(CompilationException.class,
                () -> compiler.compile(SOURCE, CompileOptions.builder(CompileTarget.ptx(9, 0)).options("--bogus").build()));
        assertEquals("NVRTC_ERROR_INVALID_OPTION", e.resultName());
        assertTrue(e.log().contains("--bogus"), e.log());
    }

    @Test
    void whenTheLogOfAFailedCompileCannotBeReadTheCompileErrorIsStillTheOneReported() {
        fake.failing("nvrtcGetProgramLogSize", Nvrtc.NVRTC_ERROR_INTERNAL_ERROR());
        CompilationException e = assertThrows(CompilationException.class,
                () -> compiler.compile("#error x\n", CompileOptions.of(CompileTarget.ptx(9, 0))));
        assertEquals("NVRTC_ERROR_COMPILATION", e.resultName());
        assertTrue(e.log().contains("NVRTC_ERROR_INTERNAL_ERROR"), e.log());
        assertEquals(0, fake.livePrograms());
    }

    @Test
    void aFailureAfterCompilingIsACudaExceptionNamingTheCallAndTheProgramIsStillDestroyed() {
        fake.failing("nvrtcGetPTX", Nvrtc.NVRTC_ERROR_OUT_OF_MEMORY());
        CudaException e = assertThrows(CudaException.class, () -> compiler.compile(SOURCE,
                CompileOptions.builder(CompileTarget.ptx(9, 0)).programName("oom.cu").build()));
        assertEquals("NVRTC_ERROR_OUT_OF_MEMORY", e.resultName());
        assertTrue(e.operation().contains("nvrtcGetPTX") && e.operation().contains("oom.cu"), e.operation());
        assertEquals(0, fake.livePrograms());
    }

    @Test
    void aFailedDestroyIsLoggedAndDoesNotHideTheResult() {
        fake.failing("nvrtcDestroyProgram", Nvrtc.NVRTC_ERROR_INVALID_PROGRAM());
        LogCapture.clear();
        CompiledProgram program = compiler.compile(SOURCE, CompileOptions.of(CompileTarget.ptx(9, 0)));
        assertEquals(FakeNvrtcApi.ptxFor(SOURCE, fake.lastOptions()), new String(program.image(), StandardCharsets.UTF_8));
        LogCapture.expect(Level.WARN, NvrtcProgram.class,
                "nvrtcDestroyProgram for kernel.cu failed with NVRTC_ERROR_INVALID_PROGRAM");
    }

    @Test
    void nameExpressionsAreLoweredInRequestOrder() {
        CompileOptions options = CompileOptions.builder(CompileTarget.cubin(9, 0))
                .nameExpression("&scale<float>").nameExpression("&scale<double>").nameExpression("&scale<float>")
                .build();
        CompiledProgram program = compiler.compile("template <typename T> __global__ void scale(T *p) {}", options);
        assertEquals(List.of("&scale<float>", "&scale<double>"), List.copyOf(program.loweredNames().keySet()));
        assertEquals(FakeNvrtcApi.loweredFor("&scale<float>"), program.loweredName("&scale<float>"));
        assertEquals(FakeNvrtcApi.loweredFor("&scale<double>"), program.loweredName("&scale<double>"));
    }

    @Test
    void askingForAnExpressionThatWasNotAddedIsAClearError() {
        CompiledProgram program = compiler.compile(SOURCE,
                CompileOptions.builder(CompileTarget.ptx(9, 0)).nameExpression("&scale<float>").build());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> program.loweredName("&scale<half>"));
        assertTrue(e.getMessage().contains("&scale<half>") && e.getMessage().contains("nameExpression")
                && e.getMessage().contains("&scale<float>"), e.getMessage());
    }

    @Test
    void aSourceWithANulNeverReachesNvrtc() {
        assertThrows(IllegalArgumentException.class,
                () -> compiler.compile("__global__ void k() {}\0", CompileOptions.of(CompileTarget.ptx(9, 0))));
        assertThrows(IllegalArgumentException.class, () -> compiler.compile(null, CompileOptions.of(CompileTarget.ptx(9, 0))));
        assertEquals(1, fake.calls(), "only nvrtcVersion, when the library was created");
    }

    @Test
    void theCompilerReportsWhatItPassesToEveryCompile() {
        assertEquals(TOOLKIT, compiler.toolkitIncludeDirectories());
        assertEquals("13.0", compiler.nvrtcVersion());
        assertEquals(Map.of(), compiler.compile(SOURCE, CompileOptions.of(CompileTarget.ptx(9, 0))).loweredNames());
    }
}
