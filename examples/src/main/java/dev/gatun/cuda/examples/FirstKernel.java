package dev.gatun.cuda.examples;

// The root README's first program, whole: everything between the markers is what a newcomer
// pastes into FirstKernel.java (no package) and runs, so it uses nothing but Gatun and the JDK.
// snippet:first-kernel
import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.nvrtc.CompileOptions;
import dev.gatun.cuda.nvrtc.CompileTarget;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;

/** Compiles a CUDA kernel at run time, runs it on GPU 0 over a million floats and checks every one. */
public final class FirstKernel {

    static final String SOURCE = """
            extern "C" __global__ void scale(float* x, float a, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) x[i] = a * x[i];
            }
            """;

    public static void main(String[] args) {
        int n = 1_000_003;                                   // not a multiple of the block: the last one is partial
        float[] host = new float[n];
        for (int i = 0; i < n; i++) {
            host[i] = i + 1;                                 // none zero: an element the GPU missed shows
        }
        float[] back = new float[n];
        try (CudaContext ctx = Cuda.system().device(0).context()) {     // GPU 0's primary context
            NvrtcLibrary.system().compiler().load(ctx.modules(), "first", SOURCE,   // NVRTC; cached on disk
                    CompileOptions.of(CompileTarget.ptx(ctx.device().capabilities())), "scale");
            try (Kernel scale = ctx.modules().kernel("first", "scale");
                    DeviceBuffer x = ctx.allocate(4L * n)) {
                x.asFloats().copyFrom(host);                 // host -> device
                scale.launch(ctx.computeStream(), LaunchConfig.covering(n, 256),   // checked, then queued
                        KernelArg.pointer(x), KernelArg.f32(2f), KernelArg.i32(n));
                x.asFloats().copyTo(back);                   // device -> host: waits for the kernel
            }                                                // freed once the kernel is done
        }                                                    // unloads the module; refused while an owner is open
        for (int i = 0; i < n; i++) {
            if (back[i] != 2f * host[i]) {
                throw new AssertionError("element " + i + " is " + back[i] + ", not " + 2f * host[i]);
            }
        }
        System.out.println("FirstKernel: the GPU doubled " + n + " floats, each as the CPU does");
    }
}
// end-snippet
