package dev.gatun.cuda.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.ModuleImage;
import dev.gatun.cuda.blas.BlasDoctorSection;
import dev.gatun.cuda.testing.FakeKernel;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The examples' cores on the simulated driver: everything but NVRTC (the simulator runs a kernel
 * as a Java body registered under its name, loaded from a PTX text that declares its parameters).
 * Each core must accept a kernel that computes what its CUDA source says, refuse one that does
 * not, and leave nothing allocated once its context is closed.
 */
class SimulatedExamplesTest {

    private static final long SEED = 20261202L;

    private final Simulated sim = new Simulated();

    @AfterEach
    void nothingLeftOrMisused() {
        sim.cuda.device(0).context().close(); // refuses while an owner made from it is open
        assertEquals(List.of(), sim.gpu.violations(), "frees that would have been unsafe on a GPU");
        assertEquals(0, sim.gpu.liveDeviceAllocations(), "device memory left allocated");
        assertEquals(0, sim.gpu.liveHostAllocations(), "pinned memory left allocated");
        assertEquals(0, sim.gpu.liveGraphs() + sim.gpu.liveGraphExecs(), "graphs or executables left");
    }

    @Test
    void firstProgramGetsItsArrayBackWithTheZeroedPrefix() {
        assertTrue(FirstProgram.run(sim.cuda));
    }

    // ---- NvrtcKernel: saxpy(y, x, a, n) ----

    private CudaContext withSaxpy(FakeKernel body) {
        sim.gpu.kernelBody("saxpy", body);
        CudaContext ctx = sim.cuda.device(0).context();
        ctx.modules().load("blas", ModuleImage.ptx("saxpy.ptx", Ptx.module("saxpy", "u64", "u64", "f32", "u32")));
        return ctx;
    }

    /** y[i] = a * x[i] + y[i], as the CUDA source says (with the fused rounding a GPU may use). */
    private static void saxpy(FakeKernel.Launch l) {
        int n = l.i32(3);
        MemorySegment y = l.memory(l.pointer(0), 4L * n);
        MemorySegment x = l.memory(l.pointer(1), 4L * n);
        for (int i = 0; i < n; i++) {
            y.setAtIndex(ValueLayout.JAVA_FLOAT, i, Math.fma(l.f32(2), x.getAtIndex(ValueLayout.JAVA_FLOAT, i),
                    y.getAtIndex(ValueLayout.JAVA_FLOAT, i)));
        }
    }

    @Test
    void nvrtcKernelMatchesTheCpuWithASaxpyKernel() {
        assertTrue(NvrtcKernel.run(withSaxpy(SimulatedExamplesTest::saxpy), 1000, SEED));
        assertEquals(2, sim.gpu.launches());
    }

    @Test
    void nvrtcKernelNoticesAKernelThatSkipsTheLastElement() {
        FakeKernel shortByOne = l -> {
            int n = l.i32(3);
            MemorySegment y = l.memory(l.pointer(0), 4L * n);
            MemorySegment x = l.memory(l.pointer(1), 4L * n);
            for (int i = 0; i < n - 1; i++) {
                y.setAtIndex(ValueLayout.JAVA_FLOAT, i, l.f32(2) * x.getAtIndex(ValueLayout.JAVA_FLOAT, i)
                        + y.getAtIndex(ValueLayout.JAVA_FLOAT, i));
            }
        };
        assertFalse(NvrtcKernel.run(withSaxpy(shortByOne), 1000, SEED));
    }

    // ---- PinnedPipeline: hash(y, x, n) ----

    private CudaContext withHash(FakeKernel body) {
        sim.gpu.kernelBody("hash", body);
        CudaContext ctx = sim.cuda.device(0).context();
        ctx.modules().load("pipeline", ModuleImage.ptx("hash.ptx", Ptx.module("hash", "u64", "u64", "u32")));
        return ctx;
    }

    /** y[i] = x[i] * 0x9E3779B1 + 12345, in wrapping 32-bit arithmetic, as the CUDA source says. */
    private static void hash(FakeKernel.Launch l) {
        int n = l.i32(2);
        MemorySegment y = l.memory(l.pointer(0), 4L * n);
        MemorySegment x = l.memory(l.pointer(1), 4L * n);
        for (int i = 0; i < n; i++) {
            y.setAtIndex(ValueLayout.JAVA_INT, i, x.getAtIndex(ValueLayout.JAVA_INT, i) * 0x9E3779B1 + 12345);
        }
    }

    @Test
    void pinnedPipelineMatchesTheCpuChunkByChunk() {
        assertTrue(PinnedPipeline.run(withHash(SimulatedExamplesTest::hash), 1000, SEED));
        assertEquals(PinnedPipeline.CHUNKS, sim.gpu.launches(), "one launch per chunk");
    }

    @Test
    void pinnedPipelineNoticesAChunkProcessedTwiceAndAnotherNever() {
        // Every launch writes chunk 0, as if the launch's pointers were never moved on.
        long[] first = new long[2];
        FakeKernel stuck = l -> {
            if (first[0] == 0) {
                first[0] = l.pointer(0);
                first[1] = l.pointer(1);
            }
            int n = l.i32(2);
            MemorySegment y = l.memory(first[0], 4L * n);
            MemorySegment x = l.memory(first[1], 4L * n);
            for (int i = 0; i < n; i++) {
                y.setAtIndex(ValueLayout.JAVA_INT, i, x.getAtIndex(ValueLayout.JAVA_INT, i) * 0x9E3779B1 + 12345);
            }
        };
        assertFalse(PinnedPipeline.run(withHash(stuck), 1000, SEED));
    }

    // ---- GraphScratch: mix(y, x, k, n) ----

    private CudaContext withMix(FakeKernel body) {
        sim.gpu.kernelBody("mix", body);
        CudaContext ctx = sim.cuda.device(0).context();
        ctx.modules().load("scratch", ModuleImage.ptx("mix.ptx", Ptx.module("mix", "u64", "u64", "u32", "u32")));
        return ctx;
    }

    /** y[i] = x[i] * k + x[(i + 1) % n], as the CUDA source says; {@code skipLast} leaves the last element unwritten. */
    private static FakeKernel mix(boolean skipLast) {
        return l -> {
            int n = l.i32(3);
            MemorySegment y = l.memory(l.pointer(0), 4L * n);
            MemorySegment x = l.memory(l.pointer(1), 4L * n);
            for (int i = 0; i < (skipLast ? n - 1 : n); i++) {
                y.setAtIndex(ValueLayout.JAVA_INT, i, x.getAtIndex(ValueLayout.JAVA_INT, i) * l.i32(2)
                        + x.getAtIndex(ValueLayout.JAVA_INT, (i + 1) % n));
            }
        };
    }

    @Test
    void graphScratchMatchesTheCpuOnEveryReplayAndFreesItsGraphMemory() {
        assertTrue(GraphScratch.run(withMix(mix(false)), 1000, SEED));
        assertEquals(GraphScratch.REPLAYS, sim.gpu.graphLaunches());
        assertEquals(0, sim.gpu.backedGraphAllocations(), "the graph's output was freed");
    }

    @Test
    void graphScratchNoticesAKernelThatSkipsTheLastElement() {
        assertFalse(GraphScratch.run(withMix(mix(true)), 1000, SEED));
    }

    // ---- GraphReplay: gather(out, index, table, n, m, latch) ----

    private CudaContext withGather(FakeKernel body) {
        sim.gpu.kernelBody("gather", body);
        CudaContext ctx = sim.cuda.device(0).context();
        ctx.modules().load("lookup", ModuleImage.ptx("gather.ptx",
                Ptx.module("gather", "u64", "u64", "u64", "u32", "u32", "u64")));
        return ctx;
    }

    /** The CUDA source's gather; {@code raise} false drops the latch write, as a kernel that forgot it would. */
    private static FakeKernel gather(boolean raise) {
        return l -> {
            int n = l.i32(3);
            int m = l.i32(4);
            MemorySegment out = l.memory(l.pointer(0), 4L * n);
            MemorySegment index = l.memory(l.pointer(1), 4L * n);
            MemorySegment table = l.memory(l.pointer(2), 4L * m);
            MemorySegment latch = l.memory(l.pointer(5), 4);
            for (int i = 0; i < n; i++) {
                int k = index.getAtIndex(ValueLayout.JAVA_INT, i);
                if (k < 0 || k >= m) {
                    if (raise) {
                        latch.set(ValueLayout.JAVA_INT, 0, latch.get(ValueLayout.JAVA_INT, 0) | 0x1);
                    }
                    out.setAtIndex(ValueLayout.JAVA_FLOAT, i, 0f);
                } else {
                    out.setAtIndex(ValueLayout.JAVA_FLOAT, i, table.getAtIndex(ValueLayout.JAVA_FLOAT, k));
                }
            }
        };
    }

    @Test
    void graphReplayFlagsTheBadRequestAndServesTheNextOneClean() {
        assertTrue(GraphReplay.run(withGather(gather(true)), 1000, 64, SEED));
        assertEquals(4, sim.gpu.graphLaunches(), "the executable once, then the slot for three requests");
    }

    @Test
    void graphReplayNoticesALatchThatNeverRaises() {
        assertFalse(GraphReplay.run(withGather(gather(false)), 1000, 64, SEED));
    }

    // ---- BlasGemm: cuBLAS is not simulated ----

    /**
     * Where cuBLAS is absent (a machine without the CUDA libraries, as CI's), {@code BlasGemm}'s
     * core is refused by gatun-blas's own loading, typed: a {@code CudaUnavailableException}
     * naming cuBLASLt and where it was looked for, before anything is allocated ({@code main}
     * then exits 3 with Gatun's diagnosis, as for a missing NVRTC). Where cuBLAS is installed the
     * test is skipped: the simulated driver cannot stand in for it (the libraries would make their
     * handles in a simulated context).
     */
    @Test
    void blasGemmIsRefusedTypedWhereCublasIsAbsent() {
        List<String> report = new ArrayList<>();
        new BlasDoctorSection().report(report::add); // the doctor's BLAS section: where each library was found, or not
        assumeTrue(report.stream().anyMatch(l -> l.startsWith("cublasLt: NOT FOUND")),
                "cuBLASLt is installed here, and the simulated driver cannot stand in for it: " + report);
        CudaContext ctx = sim.cuda.device(0).context();
        CudaUnavailableException e = assertThrows(CudaUnavailableException.class, () -> BlasGemm.run(ctx, SEED));
        assertTrue(e.getMessage().contains("libcublasLt.so.13"), e.getMessage());
        assertEquals(0, sim.gpu.liveDeviceAllocations(), "BlasGemm allocated before it was refused");
    }

    /** BlasGemm's check against the CPU accepts the exact product and refuses an unwritten (NaN) or wrong element. */
    @Test
    void blasGemmsCheckRefusesAWrongOrUnwrittenElement() {
        java.util.Random random = new java.util.Random(SEED);
        int m = BlasGemm.M;
        int n = BlasGemm.N;
        int k = BlasGemm.K;
        float[] a = new float[m * k];
        float[] b = new float[k * n];
        float[] bias = new float[m];
        for (float[] f : List.of(a, b, bias)) {
            for (int i = 0; i < f.length; i++) {
                f[i] = random.nextFloat(-1f, 1f);
            }
        }
        float[] product = new float[m * n];
        float[] gelu = new float[m * n];
        for (int j = 0; j < n; j++) {
            for (int i = 0; i < m; i++) {
                double sum = 0;
                for (int p = 0; p < k; p++) {
                    sum += (double) a[i + p * m] * b[p + j * k];
                }
                product[i + j * m] = (float) sum;
                gelu[i + j * m] = (float) BlasGemm.gelu(sum + bias[i]);
            }
        }
        assertTrue(BlasGemm.matches(product, a, b, null));
        assertTrue(BlasGemm.matches(gelu, a, b, bias));
        int at = 17 + 5 * m;
        float[] wrong = product.clone();
        wrong[at] += 0.01f; // about ten times the worst-case fp32 accumulation error of K = 128 products of [-1, 1) values
        assertFalse(BlasGemm.matches(wrong, a, b, null), "an element 0.01 off passed");
        float[] unwritten = gelu.clone();
        unwritten[at] = Float.NaN;
        assertFalse(BlasGemm.matches(unwritten, a, b, bias), "an unwritten element passed");
        assertFalse(BlasGemm.matches(product, a, b, bias), "a product without the epilogue passed for GELU(product + bias)");
    }
}
