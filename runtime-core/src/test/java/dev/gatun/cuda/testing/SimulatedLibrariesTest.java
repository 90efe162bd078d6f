package dev.gatun.cuda.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.driver.DriverApi;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The simulated kernel libraries load as the driver's do: lazily by default (drivers since CUDA
 * 12.2), so {@code cuLibraryLoadData} accepts PTX the JIT would reject and the failure comes when
 * a context first needs the code; eagerly when asked ({@code CUDA_MODULE_DATA_LOADING=EAGER}).
 * Bytes that are no image are refused either way.
 */
class SimulatedLibrariesTest {

    private static final String GARBAGE = ".version 8.5\n.target sm_90\nthis is not PTX\n";
    private static final String GOOD = Ptx.module("k", "u64");

    private final FakeDriverApi gpu = new FakeDriverApi();
    private final DriverApi api = gpu.api();
    private final Arena arena = Arena.ofConfined();
    private final MemorySegment out = arena.allocate(ValueLayout.JAVA_LONG);

    @AfterEach
    void close() {
        arena.close();
    }

    private int load(String image) {
        return api.cuLibraryLoadData(out, arena.allocateFrom(image), MemorySegment.NULL, MemorySegment.NULL, 0,
                MemorySegment.NULL, MemorySegment.NULL, 0);
    }

    private MemorySegment library() {
        return MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
    }

    private void makePrimaryContextCurrent() {
        assertEquals(0, api.cuCtxSetCurrent(gpu.primaryContext(0)));
    }

    @Test
    void aLazyLoadAcceptsPtxTheJitRejectsAndTheFirstContextToNeedItFails() {
        assertEquals(0, load(GARBAGE), "the lazy load keeps the image");
        MemorySegment library = library();
        makePrimaryContextCurrent();
        MemorySegment module = arena.allocate(ValueLayout.JAVA_LONG);
        assertEquals(CudaDriver.CUDA_ERROR_INVALID_PTX(), api.cuLibraryGetModule(module, library));
        assertEquals(CudaDriver.CUDA_ERROR_INVALID_PTX(), api.cuLibraryGetKernel(module, library, arena.allocateFrom("k")),
                "every use that needs the code fails the same way");
        assertEquals(0, gpu.librariesLoadedIntoContexts());
        assertEquals(0, api.cuLibraryUnload(library));
        assertEquals(0, gpu.liveLibraries());
    }

    @Test
    void anEagerLoadRejectsThePtxAtTheLoadItself() {
        gpu.eagerLibraryLoading(true);
        assertEquals(CudaDriver.CUDA_ERROR_INVALID_PTX(), load(GARBAGE));
        assertEquals(0, gpu.liveLibraries());
    }

    @Test
    void bytesThatAreNoImageAreRefusedEvenByALazyLoad() {
        assertEquals(CudaDriver.CUDA_ERROR_INVALID_IMAGE(), load("not an image"));
        assertEquals(0, gpu.liveLibraries());
    }

    @Test
    void aGoodLibraryLoadsOnceWhenAContextFirstNeedsIt() {
        assertEquals(0, load(GOOD));
        MemorySegment library = library();
        assertEquals(0, gpu.librariesLoadedIntoContexts(), "kept, not loaded");
        MemorySegment module = arena.allocate(ValueLayout.JAVA_LONG);
        assertEquals(CudaDriver.CUDA_ERROR_INVALID_CONTEXT(), api.cuLibraryGetModule(module, library),
                "cuLibraryGetModule loads into the current context: it needs one");
        makePrimaryContextCurrent();
        assertEquals(0, api.cuLibraryGetModule(module, library));
        long first = module.get(ValueLayout.JAVA_LONG, 0);
        assertEquals(0, api.cuLibraryGetModule(module, library));
        assertEquals(first, module.get(ValueLayout.JAVA_LONG, 0), "loaded once");
        assertEquals(1, gpu.librariesLoadedIntoContexts());
        assertEquals(0, api.cuLibraryUnload(library));
        assertEquals(0, gpu.liveModules());
    }

    @Test
    void thePtxSyntaxCheckAcceptsWhatPtxLooksLikeAndNamesTheFirstLineThatIsNot() {
        String ptx = GOOD + "// a comment\n$L__BB0_2:\n\t@%p1 bra \t$L__BB0_2;\n\tld.param.u64 %rd1,\n\t\t[k_param_0];\n";
        assertNull(SimulatedModules.syntaxError(ptx));
        String error = SimulatedModules.syntaxError(GARBAGE);
        assertTrue(error.startsWith("line 3; error   : syntax error at 'this is not PTX'"), error);
    }
}
