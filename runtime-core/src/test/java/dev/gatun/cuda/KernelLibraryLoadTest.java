package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.FakeKernel;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link CudaContext#loadLibrary} on the simulated driver, which loads libraries lazily as drivers
 * since CUDA 12.2 do (issue 34): an image the driver rejects fails at {@code loadLibrary} with the
 * module path's {@link ImageRejectedException}, not at its first kernel, and leaves nothing
 * loaded; a good library is loaded into the context at once and its kernel runs.
 */
class KernelLibraryLoadTest {

    /** PTX as Gatun's checks see it (.version and .target, no stray NUL), and no PTX to the driver's JIT. */
    private static final String GARBAGE = ".version 8.5\n.target sm_90\n.address_size 64\n\nthis is not PTX at all\n";
    private static final int INVALID_PTX = CudaDriver.CUDA_ERROR_INVALID_PTX();

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();
    private final ModuleImage garbage = ModuleImage.ptx("garbage.ptx", GARBAGE);

    @AfterEach
    void nothingLoadedOrMisused() {
        System.clearProperty(ImageRejectedException.SAVE_PROPERTY);
        ctx.close();
        assertEquals(0, sim.gpu.liveLibraries());
        assertEquals(0, sim.gpu.liveModules());
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void garbagePtxFailsAtLoadLibraryAsItFailsInTheModuleRegistry() {
        ImageRejectedException module = assertThrows(ImageRejectedException.class, () -> ctx.modules().load("m", garbage));
        sim.faults.countCalls();
        ImageRejectedException library = assertThrows(ImageRejectedException.class, () -> ctx.loadLibrary(garbage));

        assertEquals(INVALID_PTX, module.result());
        assertEquals(INVALID_PTX, library.result(), library.getMessage());
        assertEquals("garbage.ptx", library.artifact());
        assertEquals(ModuleImage.Kind.PTX, library.kind());
        assertEquals(garbage.sha256(), library.sha256());
        assertTrue(library.operation().startsWith("cuLibraryGetModule(garbage.ptx"), library.operation());
        assertTrue(library.driverLog().stream().anyMatch(line -> line.contains("syntax error at 'this is not PTX at all'")),
                () -> "the driver's own complaint: " + library.driverLog());
        assertEquals(1, sim.faults.calls("cuLibraryLoadData"), "the lazy load itself accepted the image");
        assertEquals(1, sim.faults.calls("cuLibraryUnload"), "and Gatun unloaded it at once");
        assertEquals(0, sim.gpu.liveLibraries());
        assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.LIBRARY));
    }

    @Test
    void aDriverThatLoadsEagerlyRefusesTheImageAtTheLoadItself() {
        Simulated eager = new Simulated(new FakeDriverApi().eagerLibraryLoading(true));
        CudaContext c = eager.context();
        eager.faults.countCalls();
        ImageRejectedException e = assertThrows(ImageRejectedException.class, () -> c.loadLibrary(garbage));
        assertEquals(INVALID_PTX, e.result());
        assertTrue(e.operation().startsWith("cuLibraryLoadData(garbage.ptx"), e.operation());
        assertEquals(0, eager.faults.calls("cuLibraryGetModule"), "nothing was loaded to load into the context");
        assertEquals(0, eager.gpu.liveLibraries());
        c.close();
    }

    @Test
    void aRejectedLibraryIsKeptWhereTheSettingSaysAsARejectedModuleIs(@TempDir Path dir) throws Exception {
        System.setProperty(ImageRejectedException.SAVE_PROPERTY, dir.toString());
        ImageRejectedException e = assertThrows(ImageRejectedException.class, () -> ctx.loadLibrary(garbage));
        Path copy = dir.resolve("garbage.ptx-" + garbage.sha256().substring(0, 12) + ".ptx");
        assertEquals(copy.toString(), e.savedCopy().orElseThrow());
        assertArrayEquals(GARBAGE.getBytes(StandardCharsets.UTF_8), Files.readAllBytes(copy));
    }

    @Test
    void aGoodLibraryIsLoadedIntoTheContextAtOnceAndItsKernelMatchesTheCpu() {
        sim.gpu.kernelBody("add", FakeKernel.ADD); // add(p, n, v): p[i] += v
        sim.faults.countCalls();
        try (KernelLibrary lib = ctx.loadLibrary(ModuleImage.ptx("add.ptx", Ptx.module("add", "u64", "u32", "u32")))) {
            assertEquals(1, sim.gpu.librariesLoadedIntoContexts(), "loaded into the context before any kernel was asked for");
            assertEquals(1, sim.faults.calls("cuLibraryGetModule"));
            int[] data = new Random(34).ints(256).toArray();
            int[] expected = data.clone();
            for (int i = 0; i < expected.length; i++) {
                expected[i] += 5;
            }
            try (Kernel add = lib.kernel("add"); DeviceBuffer b = ctx.allocate(4L * data.length)) {
                b.asInts().copyFrom(data);
                add.launch(ctx.computeStream(), LaunchConfig.of(1, 256), KernelArg.pointer(b), KernelArg.i32(data.length),
                        KernelArg.i32(5));
                int[] out = new int[data.length];
                b.asInts().copyTo(out);
                assertArrayEquals(expected, out);
            }
        }
        ctx.reap();
    }
}
