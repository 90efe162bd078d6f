package dev.gatun.cuda.gpu;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.nvrtc.CompileOptions;
import dev.gatun.cuda.nvrtc.CompileTarget;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;

/** What the GPU tests share: device 0's context, kernels compiled with NVRTC, seeded random data. */
final class Gpu {

    private static final AtomicInteger MODULES = new AtomicInteger();

    private Gpu() {
    }

    static CudaContext context() {
        return Cuda.system().device(0).context();
    }

    /** Compiles {@code source} for device 0 (PTX for its compute capability) and returns one kernel. */
    static Kernel kernel(String source, String function, String... options) {
        CudaContext ctx = context();
        String name = "gpu-test-" + MODULES.incrementAndGet();
        NvrtcLibrary.system().compiler().load(ctx.modules(), name, source, CompileOptions.builder(CompileTarget.ptx(ctx.device().capabilities()))
                .programName(function + ".cu").options(options).build(), function);
        Kernel k = ctx.modules().kernel(name, function);
        ctx.modules().unload(name); // the kernel keeps the module alive; the registry need not
        return k;
    }

    /**
     * The compute-sanitizer tool this run is under ("memcheck", ...), or empty: {@code ./sanitize}
     * exports {@code GATUN_SANITIZER}. A test whose size is a repetition count (not a property it
     * checks) runs fewer repetitions there, since every instrumented launch costs milliseconds.
     */
    static Optional<String> sanitizer() {
        return Optional.ofNullable(System.getenv("GATUN_SANITIZER")).filter(t -> !t.isEmpty());
    }

    /** A random source whose seed is in every assertion message, so a failure can be replayed. */
    static Random random(long seed) {
        return new Random(seed);
    }

    static long seed() {
        return System.nanoTime();
    }

    /** A kernel whose blocks wait (bounded, about a minute) until a host-visible flag is set, then fill. */
    static final String SPIN_THEN_FILL = """
            extern "C" __global__ void spin_then_fill(volatile int* flag, float* out, float value, long long n) {
                if (threadIdx.x == 0) {
                    for (long long spins = 0; *flag == 0 && spins < (1LL << 26); spins++) {
                        __nanosleep(1000);
                    }
                }
                __syncthreads();
                for (long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x; i < n;
                        i += (long long) gridDim.x * blockDim.x) {
                    out[i] = value;
                }
            }
            """;
}
