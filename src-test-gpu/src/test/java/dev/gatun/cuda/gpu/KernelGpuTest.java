package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceAttribute;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.DeviceCapabilities;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.KernelAttributes;
import dev.gatun.cuda.KernelLaunch;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.ModuleImage;
import dev.gatun.cuda.ModuleRegistry;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.junit.RequiresGpu;
import dev.gatun.cuda.nvrtc.CompileOptions;
import dev.gatun.cuda.nvrtc.CompileTarget;
import dev.gatun.cuda.nvrtc.CompiledProgram;
import dev.gatun.cuda.nvrtc.KernelCache;
import dev.gatun.cuda.nvrtc.NvrtcCompiler;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;
import org.junit.jupiter.api.io.TempDir;

/** Real kernels, compiled with NVRTC, checked against the CPU on random inputs into poisoned outputs. */
@RequiresGpu
class KernelGpuTest {

    private static final String SAXPY = """
            extern "C" __global__ void saxpy(float* y, const float* x, float a, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) y[i] = a * x[i] + y[i];
            }
            """;

    /** 128 values live at once in each thread: the compiler keeps them in registers (no cap given), over 64 of them. */
    private static final String HEAVY = """
            extern "C" __global__ void heavy(float* out, const float* in, int n) {
                float acc[128];
                #pragma unroll
                for (int k = 0; k < 128; k++) acc[k] = in[(threadIdx.x + k) % n];
                #pragma unroll
                for (int r = 0; r < 8; r++) {
                    #pragma unroll
                    for (int k = 0; k < 128; k++) acc[k] = acc[k] * acc[(k + r + 1) % 128] + 1.0f;
                }
                float s = 0.0f;
                #pragma unroll
                for (int k = 0; k < 128; k++) s += acc[k];
                out[blockIdx.x * blockDim.x + threadIdx.x] = s;
            }
            """;

    @Test
    void aBlockTooLargeForTheKernelsRegistersIsRefusedNamingTheRegistersAndTheLimit(TestReporter reporter) {
        CudaContext ctx = Gpu.context();
        try (Kernel k = Gpu.kernel(HEAVY, "heavy"); DeviceBuffer in = ctx.allocate(4L * 1024);
                DeviceBuffer out = ctx.allocate(4L * 1024)) {
            KernelAttributes a = k.attributes();
            assertTrue(a.registersPerThread() > 64 && a.maxThreadsPerBlock() < 1024,
                    "the kernel was meant to need over 64 registers: " + a);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> k.prepare(
                    LaunchConfig.of(1, 1024), KernelArg.pointer(out), KernelArg.pointer(in), KernelArg.i32(1024)));
            assertTrue(e.getMessage().contains("a block of 1024 threads is more than the " + a.maxThreadsPerBlock()
                    + " this kernel can run per block: it uses " + a.registersPerThread() + " registers per thread"),
                    e.getMessage());
            reporter.publishEntry("register limit", e.getMessage()); // a real message, for the README
            // The limit it names is the driver's: a block of that size runs, and each thread writes
            // what the CPU computes (its input written first: initcheck reported the read of
            // never-written memory when it was not; the output poisoned first).
            int threads = a.maxThreadsPerBlock();
            ctx.computeStream().fill(in.asInts(), 0);
            ctx.computeStream().fill(out.asInts(), 0x7FC0DEAD);
            k.prepare(LaunchConfig.of(1, threads), KernelArg.pointer(out), KernelArg.pointer(in),
                    KernelArg.i32(1024)).launch(ctx.computeStream());
            float[] got = new float[threads];
            out.asFloats().slice(0, threads).copyTo(got);
            float[] expected = new float[threads];
            Arrays.fill(expected, heavyOnZeros());
            assertArrayEquals(expected, got);
        }
    }

    /** What {@code heavy} writes in every thread when its input is all zeros, computed as the kernel does. */
    private static float heavyOnZeros() {
        float[] acc = new float[128];
        for (int r = 0; r < 8; r++) {
            for (int k = 0; k < 128; k++) {
                acc[k] = acc[k] * acc[(k + r + 1) % 128] + 1.0f;
            }
        }
        float s = 0.0f;
        for (int k = 0; k < 128; k++) {
            s += acc[k];
        }
        return s;
    }

    @Test
    void saxpyMatchesTheCpuAndScalarUpdatesInPlaceTakeEffect() {
        int n = (1 << 22) + 17;
        long seed = Gpu.seed();
        Random r = new Random(seed);
        float[] x = new float[n];
        float[] y = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = r.nextFloat() * 2 - 1;
            y[i] = r.nextFloat() * 2 - 1;
        }
        CudaContext ctx = Gpu.context();
        try (Kernel k = Gpu.kernel(SAXPY, "saxpy", "--fmad=false"); DeviceBuffer dx = ctx.allocate(4L * n);
                DeviceBuffer dy = ctx.allocate(4L * n)) {
            dx.asFloats().copyFrom(x);
            dy.asFloats().copyFrom(y);
            KernelLaunch launch = k.prepare(LaunchConfig.covering(n, 256), KernelArg.pointer(dy), KernelArg.pointer(dx),
                    KernelArg.f32(0.5f), KernelArg.i32(n));
            launch.launch(ctx.computeStream());
            launch.setFloat(2, -3f).setInt(3, n / 2);
            launch.launch(ctx.computeStream());
            float[] expected = y.clone();
            for (int i = 0; i < n; i++) {
                expected[i] = 0.5f * x[i] + expected[i];
            }
            for (int i = 0; i < n / 2; i++) {
                expected[i] = -3f * x[i] + expected[i];
            }
            float[] out = new float[n];
            Arrays.fill(out, Float.NaN);
            dy.asFloats().copyTo(out);
            assertArrayEquals(expected, out, "seed=" + seed);
        }
    }

    @Test
    void everyScalarTypeReachesTheKernelIntact() {
        String source = """
                extern "C" __global__ void scalars(signed char a, short b, int c, long long d, float e, double f,
                                                   unsigned long long* p, double* out) {
                    out[0] = a; out[1] = b; out[2] = c; out[3] = (double) d; out[4] = e; out[5] = f;
                    out[6] = (double) (p == (unsigned long long*) out);
                }
                """;
        CudaContext ctx = Gpu.context();
        try (Kernel k = Gpu.kernel(source, "scalars"); DeviceBuffer out = ctx.allocate(7 * 8)) {
            double[] poison = new double[7];
            Arrays.fill(poison, Double.NaN);
            out.asDoubles().copyFrom(poison);
            k.launch(ctx.computeStream(), LaunchConfig.of(1, 1), KernelArg.i8((byte) -7), KernelArg.i16((short) -30000),
                    KernelArg.i32(123456789), KernelArg.i64(1L << 40), KernelArg.f32(1.25f), KernelArg.f64(Math.PI),
                    KernelArg.pointer(out), KernelArg.pointer(out));
            double[] got = new double[7];
            out.asDoubles().copyTo(got);
            assertArrayEquals(new double[] {-7, -30000, 123456789, 1L << 40, 1.25, Math.PI, 1}, got);
            assertEquals(8, k.parameters().orElseThrow().size());
        }
    }

    @Test
    void wrongArgumentsAreRejectedFromTheDriversParameterInfo() {
        try (Kernel k = Gpu.kernel(SAXPY, "saxpy"); DeviceBuffer b = Gpu.context().allocate(16)) {
            assertThrows(IllegalArgumentException.class, () -> k.prepare(LaunchConfig.of(1, 32), KernelArg.pointer(b),
                    KernelArg.pointer(b), KernelArg.f32(1)));
            assertThrows(IllegalArgumentException.class, () -> k.prepare(LaunchConfig.of(1, 32), KernelArg.pointer(b),
                    KernelArg.pointer(b), KernelArg.f64(1), KernelArg.i32(4)));
            assertThrows(IllegalArgumentException.class, () -> k.prepare(LaunchConfig.of(1, 2048), KernelArg.pointer(b),
                    KernelArg.pointer(b), KernelArg.f32(1), KernelArg.i32(4)));
        }
    }

    @Test
    void dynamicSharedMemoryAboveTheDefaultIsOptedInAndAboveTheCeilingRefused() {
        String source = """
                extern "C" __global__ void reverse(const float* in, float* out, int n) {
                    extern __shared__ float s[];
                    for (int i = threadIdx.x; i < n; i += blockDim.x) s[i] = in[i];
                    __syncthreads();
                    for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = s[n - 1 - i];
                }
                """;
        int n = 25_600; // 100 KiB of shared memory: above the 48 KiB default
        float[] in = new float[n];
        Random r = new Random(Gpu.seed());
        for (int i = 0; i < n; i++) {
            in[i] = r.nextFloat();
        }
        CudaContext ctx = Gpu.context();
        try (Kernel k = Gpu.kernel(source, "reverse"); DeviceBuffer din = ctx.allocate(4L * n); DeviceBuffer dout = ctx.allocate(4L * n)) {
            din.asFloats().copyFrom(in);
            ctx.computeStream().fill(dout.asInts(), Float.floatToRawIntBits(Float.NaN));
            k.launch(ctx.computeStream(), LaunchConfig.of(1, 512).withSharedMemoryBytes(4 * n), KernelArg.pointer(din),
                    KernelArg.pointer(dout), KernelArg.i32(n));
            float[] out = new float[n];
            dout.asFloats().copyTo(out);
            for (int i = 0; i < n; i++) {
                assertEquals(in[n - 1 - i], out[i], "element " + i);
            }
            assertTrue(k.attributes().maxDynamicSharedBytes() >= 4 * n);
            int ceiling = ctx.device().capabilities().sharedMemoryPerBlockOptIn();
            assertThrows(IllegalArgumentException.class, () -> k.prepare(LaunchConfig.of(1, 512).withSharedMemoryBytes(ceiling + 1),
                    KernelArg.pointer(din), KernelArg.pointer(dout), KernelArg.i32(n)));
        }
    }

    @Test
    void aCooperativeGridSynchronizesAndAnOversizedOneIsRefused() {
        String source = """
                #include <cooperative_groups.h>
                namespace cg = cooperative_groups;
                extern "C" __global__ void total(const int* in, int* partial, int* out, int n) {
                    cg::grid_group grid = cg::this_grid();
                    int sum = 0;
                    for (int i = grid.thread_rank(); i < n; i += grid.size()) sum += in[i];
                    atomicAdd(&partial[blockIdx.x], sum);
                    grid.sync();
                    if (grid.thread_rank() == 0) {
                        int t = 0;
                        for (int b = 0; b < gridDim.x; b++) t += partial[b];
                        *out = t;
                    }
                }
                """;
        int n = 1 << 20;
        int[] in = new int[n];
        Random r = new Random(Gpu.seed());
        long expected = 0;
        for (int i = 0; i < n; i++) {
            in[i] = r.nextInt(1000);
            expected += in[i];
        }
        CudaContext ctx = Gpu.context();
        int sms = ctx.device().capabilities().multiprocessorCount();
        try (Kernel k = Gpu.kernel(source, "total"); DeviceBuffer din = ctx.allocate(4L * n);
                DeviceBuffer partial = ctx.allocate(4L * sms); DeviceBuffer out = ctx.allocate(4)) {
            din.asInts().copyFrom(in);
            ctx.computeStream().memset(partial.bytes(), (byte) 0);
            ctx.computeStream().fill(out.asInts(), -1);
            k.launch(ctx.computeStream(), LaunchConfig.of(sms, 256).withCooperative(true), KernelArg.pointer(din),
                    KernelArg.pointer(partial), KernelArg.pointer(out), KernelArg.i32(n));
            int[] got = new int[1];
            out.asInts().copyTo(got);
            assertEquals(expected, got[0]);
            int perSm = k.maxActiveBlocksPerMultiprocessor(256, 0);
            assertThrows(IllegalArgumentException.class, () -> k.prepare(LaunchConfig.of(perSm * sms + 1, 256).withCooperative(true),
                    KernelArg.pointer(din), KernelArg.pointer(partial), KernelArg.pointer(out), KernelArg.i32(n)));
        }
    }

    @Test
    void clusterLaunchesRunOnHopper() {
        String source = """
                #include <cooperative_groups.h>
                namespace cg = cooperative_groups;
                extern "C" __global__ void rank(int* out) {
                    cg::cluster_group c = cg::this_cluster();
                    if (threadIdx.x == 0) out[blockIdx.x] = (int) c.block_rank() * 1000 + (int) c.num_blocks();
                }
                """;
        CudaContext ctx = Gpu.context();
        try (Kernel k = Gpu.kernel(source, "rank"); DeviceBuffer out = ctx.allocate(4 * 8)) {
            ctx.computeStream().fill(out.asInts(), -1);
            LaunchConfig config = LaunchConfig.of(8, 32).withCluster(2, 1, 1);
            k.launch(ctx.computeStream(), config, KernelArg.pointer(out));
            int[] got = new int[8];
            out.asInts().copyTo(got);
            assertArrayEquals(new int[] {2, 1002, 2, 1002, 2, 1002, 2, 1002}, got);
            assertTrue(k.maxActiveClusters(config) > 0);
        }
    }

    @Test
    void aReplacedModuleKeepsRunningTheOldImageForItsKernels() {
        String source = "extern \"C\" __global__ void version(int* out) { *out = VERSION; }";
        CudaContext ctx = Gpu.context();
        ModuleRegistry modules = ctx.modules();
        CompileOptions v1 = CompileOptions.builder(CompileTarget.ptx(ctx.device().capabilities())).options("-DVERSION=1").build();
        CompileOptions v2 = CompileOptions.builder(CompileTarget.ptx(ctx.device().capabilities())).options("-DVERSION=2").build();
        NvrtcLibrary.system().compiler().load(modules, "versioned", source, v1, "version");
        try (Kernel old = modules.kernel("versioned", "version"); DeviceBuffer out = ctx.allocate(4)) {
            NvrtcLibrary.system().compiler().load(modules, "versioned", source, v2, "version");
            try (Kernel fresh = modules.kernel("versioned", "version")) {
                int[] got = new int[1];
                old.launch(ctx.computeStream(), LaunchConfig.of(1, 1), KernelArg.pointer(out));
                out.asInts().copyTo(got);
                assertEquals(1, got[0], "the old kernel runs the old image");
                fresh.launch(ctx.computeStream(), LaunchConfig.of(1, 1), KernelArg.pointer(out));
                out.asInts().copyTo(got);
                assertEquals(2, got[0]);
            }
        } finally {
            modules.unload("versioned");
        }
    }

    @Test
    void templatesAreFoundByNameExpressionAndCubinLoadsToo() {
        String source = """
                template <typename T> __global__ void scale(T* v, T by, int n) {
                    int i = blockIdx.x * blockDim.x + threadIdx.x;
                    if (i < n) v[i] = v[i] * by;
                }
                """;
        CudaContext ctx = Gpu.context();
        for (CompileTarget target : new CompileTarget[] {CompileTarget.ptx(ctx.device().capabilities()),
                CompileTarget.cubin(ctx.device().capabilities())}) {
            NvrtcLibrary.system().compiler().load(ctx.modules(), "templates", source, CompileOptions.builder(target)
                    .nameExpression("scale<float>").nameExpression("scale<double>").build(), "scale<double>");
            try (Kernel f = ctx.modules().kernel("templates", "scale<float>");
                    Kernel d = ctx.modules().kernel("templates", "scale<double>"); DeviceBuffer fb = ctx.allocate(16);
                    DeviceBuffer db = ctx.allocate(32)) {
                fb.asFloats().copyFrom(new float[] {1, 2, 3, 4});
                db.asDoubles().copyFrom(new double[] {1, 2, 3, 4});
                f.launch(ctx.computeStream(), LaunchConfig.of(1, 32), KernelArg.pointer(fb), KernelArg.f32(2.5f), KernelArg.i32(4));
                d.launch(ctx.computeStream(), LaunchConfig.of(1, 32), KernelArg.pointer(db), KernelArg.f64(-1), KernelArg.i32(3));
                float[] fo = new float[4];
                double[] dout = new double[4];
                fb.asFloats().copyTo(fo);
                db.asDoubles().copyTo(dout);
                assertArrayEquals(new float[] {2.5f, 5, 7.5f, 10}, fo, target.toString());
                assertArrayEquals(new double[] {-1, -2, -3, 4}, dout, target.toString());
            } finally {
                ctx.modules().unload("templates");
            }
        }
    }

    @Test
    void aModuleRestoredFromTheKernelCacheComputesWhatAFreshCompileDoes(@TempDir Path cacheDir) throws Exception {
        CudaContext ctx = Gpu.context();
        CompileOptions options = CompileOptions.builder(CompileTarget.ptx(ctx.device().capabilities())).programName("saxpy.cu").build();
        NvrtcCompiler cold = NvrtcLibrary.system().compiler(KernelCache.at(cacheDir));
        CompiledProgram fresh = cold.compile(SAXPY, options);
        long entries;
        try (var files = Files.list(cacheDir)) {
            entries = files.count();
        }
        assertTrue(entries >= 1, "the compile wrote a cache entry");
        KernelCache warm = KernelCache.at(cacheDir);
        CompiledProgram cached = NvrtcLibrary.system().compiler(warm).compile(SAXPY, options);
        assertEquals(fresh, cached);
        assertEquals(1, warm.counters().hits(), "restored from the entry, not compiled again");
        float[][] results = new float[2][];
        int i = 0;
        for (CompiledProgram p : new CompiledProgram[] {fresh, cached}) {
            ctx.modules().load("cached-" + i, ModuleImage.of("cache test", p.image()), "saxpy");
            try (Kernel k = ctx.modules().kernel("cached-" + i, "saxpy"); DeviceBuffer y = ctx.allocate(4 * 4);
                    DeviceBuffer x = ctx.allocate(4 * 4)) {
                y.asFloats().copyFrom(new float[] {1, 2, 3, 4});
                x.asFloats().copyFrom(new float[] {10, 20, 30, 40});
                k.launch(ctx.computeStream(), LaunchConfig.of(1, 32), KernelArg.pointer(y), KernelArg.pointer(x),
                        KernelArg.f32(0.5f), KernelArg.i32(4));
                results[i] = new float[4];
                y.asFloats().copyTo(results[i]);
            } finally {
                ctx.modules().unload("cached-" + i);
            }
            i++;
        }
        assertArrayEquals(new float[] {6, 12, 18, 24}, results[0]);
        assertArrayEquals(results[0], results[1]);
    }

    @Test
    void attributesAndOccupancyAreSane() {
        try (Kernel k = Gpu.kernel(SAXPY, "saxpy")) {
            KernelAttributes a = k.attributes();
            assertTrue(a.registersPerThread() > 0 && a.registersPerThread() <= 255, a.toString());
            assertTrue(a.maxThreadsPerBlock() >= 256, a.toString());
            assertEquals(90, a.binaryVersion(), a.toString());
            assertTrue(k.maxActiveBlocksPerMultiprocessor(256, 0) >= 1);
            Kernel.BlockSizeSuggestion s = k.suggestBlockSize(0, 0);
            assertTrue(s.blockSize() >= 32 && s.blockSize() <= 1024 && s.minGridSize() > 0, s.toString());
        }
    }

    @Test
    void perAxisLimitsAreRefusedBeforeTheDriverAndAValidLaunchThenStillComputes() {
        String source = """
                extern "C" __global__ void affine3d(unsigned int* out, const unsigned int* x, unsigned int a, int n) {
                    int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
                    int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
                    int i = b * (blockDim.x * blockDim.y * blockDim.z) + t;
                    if (i < n) out[i] = x[i] * a + (unsigned int) i;
                }
                """;
        CudaContext ctx = Gpu.context();
        DeviceCapabilities caps = ctx.device().capabilities();
        // The raw attributes: the limits come from the driver, not from the fallbacks.
        assertEquals(64, ctx.device().attribute(DeviceAttribute.MAX_BLOCK_DIM_Z), "raw max block z");
        assertEquals(64, caps.maxBlockDimZ());
        int maxGridY = ctx.device().attribute(DeviceAttribute.MAX_GRID_DIM_Y);
        assertEquals(maxGridY, caps.maxGridDimY());
        int n = 100_003;
        long seed = Gpu.seed();
        Random r = new Random(seed);
        int[] x = new int[n];
        for (int i = 0; i < n; i++) {
            x[i] = r.nextInt();
        }
        int a = r.nextInt() | 1;
        Stream s = ctx.computeStream();
        try (Kernel k = Gpu.kernel(source, "affine3d"); DeviceBuffer dx = ctx.allocate(4L * n);
                DeviceBuffer out = ctx.allocate(4L * n)) {
            dx.asInts().copyFrom(x);
            s.fill(out.asInts(), 0xDEADBEEF);
            LaunchConfig tallBlock = LaunchConfig.of(1, 1, 1, 2, 2, 128); // 512 threads, but z over 64
            LaunchConfig tallGrid = LaunchConfig.of(1, maxGridY + 1, 1, 32, 1, 1);
            for (LaunchConfig bad : new LaunchConfig[] {tallBlock, tallBlock.withCooperative(true),
                    tallBlock.withCluster(1, 1, 1), tallGrid, tallGrid.withCooperative(true), tallGrid.withCluster(1, 1, 1)}) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> k.launch(s, bad,
                        KernelArg.pointer(out), KernelArg.pointer(dx), KernelArg.i32(a), KernelArg.i32(n)), bad::toString);
                String expected = bad.blockZ() == 128 ? "block z is 128, more than the 64" : "grid y is " + (maxGridY + 1)
                        + ", more than the " + maxGridY;
                assertTrue(e.getMessage().contains(expected), e.getMessage());
            }
            // The limit itself is fine: blocks of 2 x 2 x 64 threads over a two-dimensional grid.
            int threads = 2 * 2 * 64;
            int gridX = 7;
            int gridY = (n + threads * gridX - 1) / (threads * gridX);
            k.launch(s, LaunchConfig.of(gridX, gridY, 1, 2, 2, 64), KernelArg.pointer(out), KernelArg.pointer(dx),
                    KernelArg.i32(a), KernelArg.i32(n));
            int[] got = new int[n];
            Arrays.fill(got, 0x5A5A5A5A);
            out.asInts().copyTo(got);
            int[] expected = new int[n];
            for (int i = 0; i < n; i++) {
                expected[i] = x[i] * a + i; // wrapping, as the kernel's unsigned arithmetic
            }
            assertArrayEquals(expected, got, "seed=" + seed);
        }
    }
}
