package dev.gatun.testkit;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.ModuleImage;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.internal.driver.Driver;
import dev.gatun.cuda.nvrtc.CompileOptions;
import dev.gatun.cuda.nvrtc.CompileTarget;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import dev.gatun.cuda.testing.FakeCuda;
import dev.gatun.cuda.testing.FaultInjection;
import dev.gatun.cuda.testing.FaultPlan;
import java.util.List;

/**
 * Device 0 of the process's CUDA driver, seen through a {@link Cuda} of the test's own whose
 * every driver call passes the test's fault plan first (the same seam the simulator's calls
 * pass), so that faults work on a GPU too.
 */
final class RealGpu extends GpuUnderTest {

    /** Read before any fault is planned: naming the GPU must not fail with the test's faults. */
    private final String description;

    RealGpu() {
        DriverSeamAccess.require(); // before the first class that reaches the seam (the fault plan)
        this(new FaultPlan());
    }

    private RealGpu(FaultPlan plan) {
        super(over(plan), plan);
        this.description = "GPU " + cuda().device(0).name() + " (device 0, CUDA " + cuda().driverVersion() + ")";
    }

    /**
     * A Cuda over the system driver with {@code plan} in front.
     *
     * @throws dev.gatun.cuda.CudaUnavailableException without a usable driver
     * @throws IllegalStateException when the driver reports no device
     */
    private static Cuda over(FaultPlan plan) {
        Driver system = Driver.system();
        Cuda cuda = FakeCuda.over(Driver.create(FaultInjection.around(system.api(), plan), system.library()));
        if (cuda.deviceCount() == 0) {
            throw new IllegalStateException("the CUDA driver (" + system.library() + ") reports no device (is "
                    + "CUDA_VISIBLE_DEVICES empty?); " + TestTarget.SETTING + "=simulated runs the tests on the simulator");
        }
        return cuda;
    }

    @Override
    public boolean isSimulated() {
        return false;
    }

    @Override
    void load(CudaContext ctx, String name, KernelCode code, JavaKernel body) {
        if (code.isPtx()) {
            ctx.modules().load(name, ModuleImage.ptx(name + ".ptx", code.text()), name);
            return;
        }
        CompileOptions.Builder options = CompileOptions.builder(CompileTarget.ptx(ctx.device().capabilities()));
        code.includeDirectories().forEach(options::includeDirectory);
        NvrtcLibrary.system().compiler().load(ctx.modules(), name, code.text(), options.build(), name);
    }

    @Override
    public void holdWhile(Stream stream, Runnable work) {
        work.run(); // a real stream cannot be held from the host: the GPU's timing decides the order
    }

    @Override
    List<String> afterContextClosed(boolean poisoned) {
        return List.of(); // the real driver reports its failures from the calls themselves
    }

    @Override
    public String toString() {
        return description;
    }
}
