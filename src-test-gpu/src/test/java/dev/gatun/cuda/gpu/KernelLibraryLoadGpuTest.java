package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.ImageRejectedException;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.KernelLibrary;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.ModuleImage;
import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.junit.RequiresGpu;
import dev.gatun.cuda.nvrtc.CompileOptions;
import dev.gatun.cuda.nvrtc.CompileTarget;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@code CudaContext.loadLibrary} on a real driver, which loads libraries lazily by default
 * (issue 34): PTX that passes Gatun's checks but not the driver's JIT fails at
 * {@code loadLibrary} with the {@link ImageRejectedException} the module registry reports for the
 * same image, and leaves no library behind; a good library, compiled by NVRTC, still loads, and its
 * kernel's results on random inputs, written into NaN-poisoned outputs, match the CPU exactly.
 * Prints one {@code LIBRARY-LOAD} line.
 */
@RequiresGpu
class KernelLibraryLoadGpuTest {

    private static final String GARBAGE = ".version 8.0\n.target sm_80\n.address_size 64\n\nthis is not PTX at all\n";
    private static final String AXPB = """
            extern "C" __global__ void axpb(const float* x, float* y, float a, float b, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) y[i] = a * x[i] + b;
            }
            """;
    private static final int N = 1 << 16;

    @Test
    void garbagePtxFailsAtLoadLibraryAndAGoodLibraryStillMatchesTheCpu() {
        CudaContext ctx = Gpu.context();
        ModuleImage garbage = ModuleImage.ptx("garbage.ptx", GARBAGE);
        long libraries = ctx.diagnostics().liveOwners(OwnerKind.LIBRARY);
        ImageRejectedException byModule = assertThrows(ImageRejectedException.class,
                () -> ctx.modules().load("issue-34-garbage", garbage));
        ImageRejectedException byLibrary = assertThrows(ImageRejectedException.class, () -> ctx.loadLibrary(garbage));
        assertEquals(byModule.resultName(), byLibrary.resultName(), "the library path reports what the module path does");
        assertEquals(garbage.sha256(), byLibrary.sha256());
        assertEquals(libraries, ctx.diagnostics().liveOwners(OwnerKind.LIBRARY), "the refused library left no owner");

        ModuleImage good = NvrtcLibrary.system().compiler().compile(AXPB, CompileOptions.builder(
                CompileTarget.ptx(ctx.device().capabilities())).programName("axpb.cu").options("--fmad=false").build())
                .moduleImage();
        Random random = Gpu.random(34);
        float[] x = new float[N];
        for (int i = 0; i < N; i++) {
            x[i] = random.nextFloat() * 2 - 1;
        }
        float a = random.nextFloat() * 4 - 2;
        float b = random.nextFloat() * 4 - 2;
        float[] expected = new float[N];
        for (int i = 0; i < N; i++) {
            expected[i] = a * x[i] + b;
        }
        float[] y = new float[N];
        Arrays.fill(y, Float.NaN);
        try (KernelLibrary lib = ctx.loadLibrary(good); Kernel axpb = lib.kernel("axpb"); Stream s = ctx.createStream();
                DeviceBuffer dx = ctx.allocate(4L * N); DeviceBuffer dy = ctx.allocate(4L * N)) {
            dx.asFloats().copyFrom(x);
            dy.asFloats().copyFrom(y); // poisoned: an element the kernel did not write stays NaN
            axpb.launch(s, LaunchConfig.covering(N, 256), KernelArg.pointer(dx), KernelArg.pointer(dy), KernelArg.f32(a),
                    KernelArg.f32(b), KernelArg.i32(N));
            dy.asFloats().copyTo(y);
        }
        assertArrayEquals(expected, y);
        String mode = System.getenv("CUDA_MODULE_DATA_LOADING") != null ? System.getenv("CUDA_MODULE_DATA_LOADING")
                : System.getenv("CUDA_MODULE_LOADING") != null ? System.getenv("CUDA_MODULE_LOADING") : "the driver's default";
        System.out.println("LIBRARY-LOAD garbage PTX refused at loadLibrary with " + byLibrary.resultName() + " ("
                + byLibrary.operation() + "), the module registry with " + byModule.resultName() + "; module loading: "
                + mode + "; a good library's kernel matches the CPU on " + N + " elements");
    }
}
