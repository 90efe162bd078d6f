package dev.gatun.cuda.gpu;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.nvtx.Nvtx;
import dev.gatun.cuda.nvtx.NvtxDomain;
import dev.gatun.cuda.nvtx.NvtxLabel;

/**
 * The program the bundle's {@code nvtx-check} runs under Nsight Compute (not a test): three
 * kernels, each launched once, {@code k_inner} inside the push/pop ranges outer then inner of the
 * domain {@code gatun-check} ("outer" a plain string, "inner" a registered one), {@code k_outer}
 * inside outer alone, {@code k_none} outside both; with {@code -Dgatun.nvtx.ranges=true} each
 * launch is also inside Gatun's own range named by its kernel, in the domain {@code Gatun}.
 * Checks each kernel's output against the CPU; exits 0 when all match, 1 otherwise.
 */
public final class NvtxUnderTool {

    private static final String SOURCE = """
            extern "C" __global__ void NAME(int* out, int n, int add) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) out[i] = i * 3 + add;
            }
            """;
    private static final int N = 256;

    private NvtxUnderTool() {
    }

    public static void main(String[] args) {
        System.out.println("nvtx-check: attached=" + Nvtx.attached() + " automaticRanges=" + Nvtx.automaticRanges());
        CudaContext ctx = Gpu.context();
        NvtxDomain check = Nvtx.domain("gatun-check");
        NvtxLabel inner = check.label("inner");
        boolean ok = true;
        try (Kernel kInner = Gpu.kernel(SOURCE.replace("NAME", "k_inner"), "k_inner");
                Kernel kOuter = Gpu.kernel(SOURCE.replace("NAME", "k_outer"), "k_outer");
                Kernel kNone = Gpu.kernel(SOURCE.replace("NAME", "k_none"), "k_none");
                Stream s = ctx.createStream(); DeviceBuffer out = ctx.allocate(4L * N)) {
            try (var _ = check.push("outer")) {
                try (var _ = check.push(inner)) {
                    ok &= run(kInner, s, out, 1);
                }
                ok &= run(kOuter, s, out, 2);
            }
            ok &= run(kNone, s, out, 3);
        }
        System.out.println("nvtx-check: kernels " + (ok ? "matched the CPU" : "DID NOT match the CPU"));
        System.exit(ok ? 0 : 1);
    }

    /** Launches {@code k} over poisoned output and checks every element. */
    private static boolean run(Kernel k, Stream s, DeviceBuffer out, int add) {
        s.fill(out.asInts(), 0x7FC0DEAD);
        k.launch(s, LaunchConfig.of(N / 64, 64), KernelArg.pointer(out), KernelArg.i32(N), KernelArg.i32(add));
        int[] got = new int[N];
        out.asInts().copyTo(got);
        for (int i = 0; i < N; i++) {
            if (got[i] != i * 3 + add) {
                System.out.println("nvtx-check: " + k.name() + " element " + i + " is " + got[i]);
                return false;
            }
        }
        return true;
    }
}
