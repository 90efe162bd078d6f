package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.DeviceCapabilities;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.ModuleImage;
import dev.gatun.cuda.junit.RequiresGpu;
import dev.gatun.cuda.nvrtc.CompileOptions;
import dev.gatun.cuda.nvrtc.CompileTarget;
import dev.gatun.cuda.nvrtc.CompiledProgram;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;

/**
 * Truncated and corrupted CUBINs and fatbins, loaded through the normal API, either load or fail
 * with a typed exception (the image checks' {@link IllegalArgumentException} before the driver, or the
 * driver's own {@link CudaException}); the driver never crashes or hangs the JVM on them, which
 * this test finishing proves. Half a cubin used to end the JVM with SIGSEGV inside
 * cuModuleLoadData. The fatbin is the real NVRTC cubin in a container built here ({@link Fatbins}).
 *
 * <p>The loads run in a child JVM: a mutation that crashes or hangs the driver then fails this
 * test, naming that mutation (the child prints each one before the driver is handed it),
 * instead of ending the whole suite. The mutations come from a seeded Random with a fixed
 * default seed, so a run that fails fails again the same way; {@code -Dgatun.fuzz.seed=N}
 * tries others.
 *
 * <p>Tagged "corrupt-images" so that {@code ./sanitize} leaves it out: compute-sanitizer
 * instruments the code of every module loaded, and its own instrumentation aborts the process
 * on a cubin whose code bytes are corrupt (seen on mutation 86, two bytes changed, one in
 * .debug_frame and one in .text, which the driver alone loads without complaint).
 */
@RequiresGpu
@Tag(GpuTags.CORRUPT_IMAGES)
class ModuleImageGpuTest {

    private static final int MUTATIONS = 1000;
    private static final String SAXPY = """
            extern "C" __global__ void saxpy(float* y, const float* x, float a, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) y[i] = a * x[i] + y[i];
            }
            """;

    private static final String LOADING = "loading ";
    private static final String COUNTS = "counts ";

    /** Runs in the child JVM: prints each mutation before the driver sees it, and the counts. */
    public static void main(String[] args) {
        CudaContext ctx = Gpu.context();
        DeviceCapabilities device = ctx.device().capabilities();
        CompiledProgram program = NvrtcLibrary.system().compiler().compile(SAXPY,
                CompileOptions.builder(CompileTarget.cubin(device)).programName("saxpy.cu").options("--fmad=false").build());
        byte[] cubin = program.image();
        byte[] fatbin = Fatbins.wrap(device.computeMajor() * 10 + device.computeMinor(), cubin);
        long seed = Long.parseLong(args[0]);
        Random r = new Random(seed);
        for (byte[] image : new byte[][] {cubin, fatbin}) {
            int loaded = 0;
            int rejected = 0;
            int refusedByDriver = 0;
            for (int i = 0; i < MUTATIONS; i++) {
                byte[] corrupt = mutate(image, r);
                String artifact = "mutation " + i + " of " + (image == cubin ? "the cubin" : "the fatbin") + ", seed " + seed;
                ModuleImage checked;
                try {
                    checked = ModuleImage.of(artifact, corrupt);
                } catch (IllegalArgumentException e) {
                    assertTrue(e.getMessage().startsWith("module image " + artifact + " "), e::getMessage);
                    rejected++;
                    continue;
                }
                System.out.println(LOADING + checked);
                System.out.flush(); // out before the driver call that may end the process
                try {
                    ctx.modules().load("fuzz", checked);
                    loaded++;
                } catch (CudaException e) {
                    if (refusedByDriver++ == 0) {
                        System.out.println("FAILURE-MESSAGE image: " + e.getMessage()); // a real one, for the README
                    }
                } finally {
                    ctx.modules().unload("fuzz");
                }
            }
            System.out.println(COUNTS + (image == cubin ? "cubin: " : "fatbin: ") + loaded + " loaded, " + rejected
                    + " rejected before the driver, " + refusedByDriver + " refused by the driver (seed " + seed + ")");
            assertEquals(MUTATIONS, loaded + rejected + refusedByDriver);
            assertTrue(rejected > MUTATIONS / 10, () -> "truncations alone are a quarter of the mutations; seed " + seed);
        }
        ctx.modules().load("fatbin", ModuleImage.of("saxpy.fatbin", fatbin), "saxpy");
        ctx.modules().unload("fatbin");
        ctx.modules().load("cubin", ModuleImage.of("saxpy.cubin", cubin), "saxpy");
        try (Kernel k = ctx.modules().kernel("cubin", "saxpy")) {
            assertSaxpyMatchesTheCpu(ctx, k, seed);
        } finally {
            ctx.modules().unload("cubin");
        }
    }

    @Test
    void corruptImagesLoadOrFailTypedAndASoundOneStillRuns(TestReporter reporter) throws IOException, InterruptedException {
        long seed = Long.getLong("gatun.fuzz.seed", 20261202L);
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Path log = Files.createTempFile("gatun-image-fuzz", ".log");
        try {
            Process child = new ProcessBuilder(java.toString(), "--enable-native-access=ALL-UNNAMED", "-cp",
                    System.getProperty("java.class.path"), ModuleImageGpuTest.class.getName(), Long.toString(seed))
                    .redirectErrorStream(true).redirectOutput(log.toFile()).start();
            boolean finished = child.waitFor(180, TimeUnit.SECONDS);
            if (!finished) {
                child.destroyForcibly().waitFor();
            }
            List<String> lines = Files.readAllLines(log);
            String last = lines.stream().filter(l -> l.startsWith(LOADING)).reduce((a, b) -> b).orElse("none");
            assertTrue(finished, () -> "the driver hung on " + last.substring(LOADING.length()) + " (seed " + seed + ")");
            assertEquals(0, child.exitValue(), () -> "the child JVM ended with " + child.exitValue() + "; the last image "
                    + "handed to the driver: " + last + " (seed " + seed + ")\n" + tail(lines));
            lines.stream().filter(l -> l.startsWith(COUNTS)).forEach(l -> reporter.publishEntry("images", l));
            lines.stream().filter(l -> l.startsWith("FAILURE-MESSAGE")).forEach(System.out::println);
            assertEquals(2, lines.stream().filter(l -> l.startsWith(COUNTS)).count(), () -> tail(lines));
        } finally {
            Files.delete(log);
        }
    }

    private static String tail(List<String> lines) {
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
    }

    /** A truncation, bit flips, byte overwrites, or a 4-byte field overwritten with an awkward value. */
    private static byte[] mutate(byte[] image, Random r) {
        int kind = r.nextInt(4);
        if (kind == 0) {
            return Arrays.copyOf(image, 1 + r.nextInt(image.length - 1));
        }
        byte[] corrupt = image.clone();
        ByteBuffer fields = ByteBuffer.wrap(corrupt).order(ByteOrder.LITTLE_ENDIAN);
        for (int edits = 1 + r.nextInt(4); edits > 0; edits--) {
            int at = r.nextInt(corrupt.length);
            switch (kind) {
                case 1 -> corrupt[at] ^= (byte) (1 << r.nextInt(8));
                case 2 -> corrupt[at] = (byte) r.nextInt(256);
                default -> {
                    int[] awkward = {0, -1, Integer.MAX_VALUE, corrupt.length, r.nextInt(), r.nextInt(64)};
                    fields.putInt(Math.min(at & ~3, corrupt.length - 4), awkward[r.nextInt(awkward.length)]);
                }
            }
        }
        return corrupt;
    }

    private static void assertSaxpyMatchesTheCpu(CudaContext ctx, Kernel k, long seed) {
        int n = (1 << 20) + 3;
        Random r = new Random(seed);
        float[] x = new float[n];
        float[] y = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = r.nextFloat() * 2 - 1;
            y[i] = r.nextFloat() * 2 - 1;
        }
        try (DeviceBuffer dx = ctx.allocate(4L * n); DeviceBuffer dy = ctx.allocate(4L * n)) {
            dx.asFloats().copyFrom(x);
            dy.asFloats().copyFrom(y);
            k.launch(ctx.computeStream(), LaunchConfig.covering(n, 256), KernelArg.pointer(dy), KernelArg.pointer(dx),
                    KernelArg.f32(0.75f), KernelArg.i32(n));
            float[] expected = new float[n];
            for (int i = 0; i < n; i++) {
                expected[i] = 0.75f * x[i] + y[i];
            }
            float[] out = new float[n];
            Arrays.fill(out, Float.NaN);
            dy.asFloats().copyTo(out);
            assertArrayEquals(expected, out, "seed=" + seed);
        }
    }
}
