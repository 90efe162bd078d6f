package example.kernelbench;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.KernelLaunch;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.nvrtc.CompileOptions;
import dev.gatun.cuda.nvrtc.CompileTarget;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.util.Random;

/**
 * The kernel being measured, with its inputs on the device and its launch prepared: put yours
 * here. The benchmark's setup makes one; the CPU tests make one over the simulated driver and
 * check what the launches compute, so the benchmark measures a kernel that does its job.
 */
public final class Saxpy implements AutoCloseable {

    /** y = a * x + y over n floats; one thread per element. */
    public static final String SOURCE = """
            extern "C" __global__ void saxpy(float* y, const float* x, float a, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) y[i] = a * x[i] + y[i];
            }
            """;

    /** The kernel's name in {@link #SOURCE}, and the module it is loaded as. */
    public static final String FUNCTION = "saxpy";
    static final String MODULE = "kernel-benchmark";

    private final int n;
    private final float a;
    private final float[] x;
    private final float[] y;
    private final DeviceBuffer dx;
    private final DeviceBuffer dy;
    private final KernelLaunch launch;

    /**
     * Compiles {@link #SOURCE} with NVRTC for the context's device (cached on disk across runs)
     * and returns its kernel; close it after the launches.
     */
    public static Kernel compile(CudaContext ctx) {
        NvrtcLibrary.system().compiler().load(ctx.modules(), MODULE, SOURCE,
                CompileOptions.of(CompileTarget.ptx(ctx.device().capabilities())), FUNCTION);
        return ctx.modules().kernel(MODULE, FUNCTION);
    }

    /**
     * Uploads {@code n} random x and y and prepares y = a * x + y: what a benchmark does once,
     * before it measures.
     *
     * @param seed the inputs' seed, so that a run can be repeated
     */
    public Saxpy(CudaContext ctx, Kernel kernel, int n, float a, long seed) {
        this.n = n;
        this.a = a;
        Random random = new Random(seed);
        x = new float[n];
        y = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = random.nextFloat() * 2 - 1;
            y[i] = random.nextFloat() * 2 - 1;
        }
        DeviceBuffer xs = ctx.allocate(4L * n);
        DeviceBuffer ys = null;
        try {
            ys = ctx.allocate(4L * n);
            xs.asFloats().copyFrom(x);
            ys.asFloats().copyFrom(y);
            // Checked here, once: the measured launches only queue.
            launch = kernel.prepare(LaunchConfig.covering(n, 256), KernelArg.pointer(ys), KernelArg.pointer(xs),
                    KernelArg.f32(a), KernelArg.i32(n));
        } catch (RuntimeException e) {
            if (ys != null) {
                ys.close();
            }
            xs.close();
            throw e;
        }
        dx = xs;
        dy = ys;
    }

    /** {@return the prepared launch: {@code launch().launch(stream)} queues y = a * x + y and allocates nothing} */
    public KernelLaunch launch() {
        return launch;
    }

    /** {@return y as the device holds it now, read back after the launches queued so far} */
    public float[] result() {
        float[] got = new float[n];
        dy.asFloats().copyTo(got);
        return got;
    }

    /** {@return what y is after {@code launches} launches, computed on the CPU} */
    public float[] expected(int launches) {
        float[] want = y.clone();
        for (int l = 0; l < launches; l++) {
            for (int i = 0; i < n; i++) {
                want[i] = a * x[i] + want[i];
            }
        }
        return want;
    }

    @Override
    public void close() {
        try (dx) {
            dy.close();
        }
    }
}
