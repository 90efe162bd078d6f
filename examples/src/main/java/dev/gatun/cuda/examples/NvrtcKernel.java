package dev.gatun.cuda.examples;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.KernelLaunch;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.nvrtc.CompileOptions;
import dev.gatun.cuda.nvrtc.CompileTarget;
import dev.gatun.cuda.nvrtc.NvrtcCompiler;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.util.Arrays;
import java.util.Random;

/**
 * Compiles a SAXPY kernel from CUDA C++ with NVRTC at run time, launches it twice with an
 * argument updated in place, and compares the result with the same computation on the CPU.
 */
public final class NvrtcKernel {

    // snippet:nvrtc-source
    /** y = a * x + y over n floats; one thread per element. */
    static final String SAXPY_SOURCE = """
            extern "C" __global__ void saxpy(float* y, const float* x, float a, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) y[i] = a * x[i] + y[i];
            }
            """;
    // end-snippet

    static final int ELEMENTS = 1_000_003; // not a multiple of the block: the last block is partial

    private NvrtcKernel() {
    }

    public static void main(String[] args) {
        ExampleMain.exit("NvrtcKernel", cuda -> {
            CudaContext ctx = cuda.device(0).context();
            try {
                compile(ctx);
                return run(ctx, ELEMENTS, System.nanoTime());
            } finally {
                ctx.close(); // unloads the modules its registry holds
            }
        });
    }

    /** Compiles {@link #SAXPY_SOURCE} for the context's device and loads it as module "blas". */
    static void compile(CudaContext ctx) {
        // snippet:nvrtc-compile
        NvrtcCompiler nvrtc = NvrtcLibrary.system().compiler();   // dev.gatun.cuda.nvrtc; cached on disk
        nvrtc.load(ctx.modules(), "blas", SAXPY_SOURCE,
                CompileOptions.of(CompileTarget.ptx(ctx.device().capabilities())), "saxpy");
        // end-snippet
    }

    /**
     * Runs y = 2x + y, then y = 0.5x + y, over {@code n} random floats with module "blas"'s
     * saxpy, and reports whether every element matches the CPU.
     */
    static boolean run(CudaContext ctx, int n, long seed) {
        Random random = new Random(seed);
        float[] x = new float[n];
        float[] y = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = random.nextFloat() * 2 - 1;
            y[i] = random.nextFloat() * 2 - 1;
        }
        float[] got = new float[n];
        Arrays.fill(got, Float.NaN); // an element the kernel or the copy misses shows as NaN
        // snippet:nvrtc-launch
        try (Kernel saxpy = ctx.modules().kernel("blas", "saxpy");
                DeviceBuffer dx = ctx.allocate(4L * n); DeviceBuffer dy = ctx.allocate(4L * n)) {
            dx.asFloats().copyFrom(x);
            dy.asFloats().copyFrom(y);
            KernelLaunch launch = saxpy.prepare(LaunchConfig.covering(n, 256),   // checked here, once
                    KernelArg.pointer(dy), KernelArg.pointer(dx), KernelArg.f32(2f), KernelArg.i32(n));
            launch.launch(ctx.computeStream());                    // y = 2x + y; no allocation once warmed
            launch.setFloat(2, 0.5f).launch(ctx.computeStream());  // a updated in place: y = 0.5x + y
            dy.asFloats().copyTo(got);                             // waits for both launches
        }
        // end-snippet
        for (int i = 0; i < n; i++) {
            float expected = 0.5f * x[i] + (2f * x[i] + y[i]);
            // The GPU may fuse a * x + y into one rounding (an FMA) where Java rounds twice.
            if (!(Math.abs(got[i] - expected) <= 1e-5f * Math.max(1f, Math.abs(expected)))) {
                return false;
            }
        }
        return true;
    }
}
