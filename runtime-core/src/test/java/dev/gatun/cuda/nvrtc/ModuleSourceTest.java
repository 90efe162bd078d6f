package dev.gatun.cuda.nvrtc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.ModuleImage;
import dev.gatun.cuda.ModuleInfo;
import dev.gatun.cuda.ModuleRegistry;
import dev.gatun.cuda.testing.FakeNvrtcApi;
import dev.gatun.cuda.testing.Simulated;
import java.util.List;
import org.junit.jupiter.api.Test;

class ModuleSourceTest {

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();
    private final FakeNvrtcApi nvrtc = new FakeNvrtcApi();
    private final ModuleRegistry modules = ctx.modules();
    private final NvrtcCompiler compiler = NvrtcLibrary.create(nvrtc, "fake nvrtc").compiler(KernelCache.disabled(), List.of());

    ModuleSourceTest() {
        sim.gpu.anyFunction(true);
    }

    private static CompileOptions ptx() {
        return CompileOptions.builder(CompileTarget.ptx(9, 0)).nameExpression("scale<float>").build();
    }

    @Test
    void kernelsOfACompiledSourceAreFoundByNameExpression() {
        ModuleInfo info = compiler.load(modules, "ops", "template <typename T> __global__ void scale(T*) {}",
                ptx());
        assertEquals(ModuleImage.Kind.PTX, info.kind());
        try (Kernel k = modules.kernel("ops", "scale<float>")) {
            assertEquals("scale<float>", k.name());
        }
        assertEquals(FakeNvrtcApi.loweredFor("scale<float>"), sim.gpu.functionLookups().getLast(),
                "the driver was asked for the lowered (mangled) name");
    }

    @Test
    void aDriverThatRejectsThePtxIsaGetsCubinForThisAndLaterSources() {
        sim.gpu.rejectPtx(true);
        ModuleInfo first = compiler.load(modules, "a", "__global__ void k() {}", ptx(), "scale<float>");
        assertEquals(ModuleImage.Kind.CUBIN, first.kind());
        assertTrue(modules.isPtxRejected());
        assertTrue(nvrtc.lastOptions().contains("--gpu-architecture=sm_90"), nvrtc.lastOptions().toString());
        int compiles = nvrtc.compiles();
        ModuleInfo second = compiler.load(modules, "b", "__global__ void j() {}", ptx());
        assertEquals(ModuleImage.Kind.CUBIN, second.kind());
        assertEquals(compiles + 1, nvrtc.compiles(), "later sources go straight to CUBIN, no PTX attempt first");
    }

    @Test
    void aCompileErrorCarriesTheLogAndChangesNothing() {
        compiler.load(modules, "ops", "__global__ void ok() {}", ptx());
        ModuleInfo before = modules.info("ops").orElseThrow();
        CompilationException e = assertThrows(CompilationException.class,
                () -> compiler.load(modules, "ops", "#error broken on purpose\n", ptx()));
        assertTrue(e.log().contains("broken on purpose"), e.log());
        assertEquals(before, modules.info("ops").orElseThrow());
        assertFalse(modules.isPtxRejected());
    }
}
