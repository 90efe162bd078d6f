package dev.gatun.cuda.nvrtc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.FakeNvrtcApi;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Every NVRTC Gatun accepts (12.x and 13.x) compiles to PTX and to CUBIN with lowered names; an
 * NVRTC without a function Gatun calls fails only the compilations that need it, typed.
 */
class NvrtcVersionsTest {

    private static final String TEMPLATE = "template <typename T> __global__ void scale(T *x) { x[0] *= 2; }\n";

    private static NvrtcCompiler compiler(FakeNvrtcApi nvrtc) {
        return NvrtcLibrary.create(nvrtc, "fake").compiler(KernelCache.disabled(), NvrtcCompilerTest.TOOLKIT);
    }

    @ParameterizedTest(name = "NVRTC {0}.{1}")
    @CsvSource({"12, 0", "12, 4", "12, 8", "13, 0"})
    void compilesPtxAndCubinWithLoweredNames(int major, int minor) {
        FakeNvrtcApi nvrtc = new FakeNvrtcApi(major, minor);
        NvrtcCompiler compiler = compiler(nvrtc);
        for (CompileTarget target : new CompileTarget[] {CompileTarget.ptx(9, 0), CompileTarget.cubin(9, 0)}) {
            CompiledProgram program = compiler.compile(TEMPLATE,
                    CompileOptions.builder(target).nameExpression("scale<float>").build());
            assertEquals(target.kind(), program.kind());
            assertTrue(program.image().length > 0);
            assertFalse(program.loweredName("scale<float>").isEmpty());
            assertEquals(major + "." + minor, program.nvrtcVersion());
        }
        assertEquals(0, nvrtc.livePrograms());
    }

    @Test
    void anNvrtcWithoutCubinFailsOnlyCubinCompilationsTypedAndDestroysTheProgram() {
        FakeNvrtcApi nvrtc = new FakeNvrtcApi(12, 4).without("nvrtcGetCUBIN");
        NvrtcCompiler compiler = compiler(nvrtc);
        NvrtcTooOldException e = assertThrows(NvrtcTooOldException.class,
                () -> compiler.compile(NvrtcCompilerTest.SOURCE, CompileOptions.of(CompileTarget.cubin(9, 0))));
        assertEquals("nvrtcGetCUBIN", e.function());
        assertEquals(11010, e.requiredVersion());
        assertEquals(12040, e.installedVersion());
        assertEquals(0, nvrtc.livePrograms(), "the program is destroyed after the failure");
        assertTrue(compiler.compile(NvrtcCompilerTest.SOURCE, CompileOptions.of(CompileTarget.ptx(9, 0))).image().length > 0);
    }
}
