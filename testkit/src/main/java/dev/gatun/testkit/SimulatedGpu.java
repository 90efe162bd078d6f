package dev.gatun.testkit;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.ModuleImage;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.testing.FakeCuda;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.FakeKernel;
import dev.gatun.cuda.testing.FaultPlan;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * A simulated GPU: Gatun's simulated driver, on which streams, events, graphs, memory pools and
 * kernels written in Java run on the CPU, in the order a GPU would run them. Each instance is a
 * device of its own, with nothing shared with any other.
 *
 * <p>What it models and what it does not: see the testkit's README ("What the simulation does
 * not model"). In short: ordering, lifetimes and errors are modelled; time, real kernels, memory
 * limits (unless {@linkplain #memoryLimit set}) and device properties are not.
 */
public final class SimulatedGpu extends GpuUnderTest {

    private final FakeDriverApi gpu;

    /**
     * A fresh simulated device, with no fault planned.
     *
     * @throws IllegalStateException when the module system keeps gatun-core's driver seam from
     *     the testkit (gatun-core on the module path, the testkit on the class path), saying what to change
     */
    public SimulatedGpu() {
        DriverSeamAccess.require(); // before the first class that reaches the seam (the simulator)
        this(new FakeDriverApi(), new FaultPlan());
    }

    private SimulatedGpu(FakeDriverApi gpu, FaultPlan faults) {
        super(FakeCuda.over(gpu, faults), faults);
        this.gpu = gpu;
    }

    @Override
    public boolean isSimulated() {
        return true;
    }

    /**
     * Makes device allocations beyond {@code bytes} in all fail with
     * {@code CUDA_ERROR_OUT_OF_MEMORY}, as a full device would; without it, the simulated device
     * never runs out. Allocations only: graphs, modules and streams take no memory here.
     *
     * @param bytes the device's capacity for allocations
     * @return this
     */
    public SimulatedGpu memoryLimit(long bytes) {
        gpu.memoryLimit(bytes);
        return this;
    }

    /** {@return how many kernel launches the simulated GPU has accepted (eager launches; graph replays count in {@link #graphLaunches()})} */
    public int launches() {
        return gpu.launches();
    }

    /** {@return how many graph executables the simulated GPU has launched} */
    public int graphLaunches() {
        return gpu.graphLaunches();
    }

    /**
     * {@return what the simulated GPU saw go wrong so far: work that failed as it ran (a
     * {@link JavaKernel} that threw), frees of memory that queued work still used} Empty in a
     * correct run; {@link #close()} fails when it is not.
     */
    public List<String> violations() {
        return gpu.violations();
    }

    @Override
    void load(CudaContext ctx, String name, KernelCode code, JavaKernel body) {
        String ptx = code.simulatedPtx(name);
        gpu.kernelBody(name, launch -> body.run(new Launch(launch)));
        ctx.modules().load(name, ModuleImage.ptx(name + ".ptx", ptx), name);
    }

    @Override
    public void holdWhile(Stream stream, Runnable work) {
        MemorySegment handle = stream.handle();
        gpu.hold(handle);
        try {
            work.run();
        } finally {
            gpu.release(handle);
        }
    }

    @Override
    List<String> afterContextClosed(boolean poisoned) {
        List<String> problems = new ArrayList<>(gpu.violations());
        if (!poisoned) {
            // A healthy context's close frees everything Gatun allocated: what is left was never Gatun's to free.
            if (gpu.liveDeviceAllocations() != 0) {
                problems.add(gpu.liveDeviceAllocations() + " device allocation(s) left after the context closed");
            }
            if (gpu.liveHostAllocations() != 0) {
                problems.add(gpu.liveHostAllocations() + " pinned host allocation(s) left after the context closed");
            }
            if (gpu.liveGraphs() + gpu.liveGraphExecs() != 0) {
                problems.add(gpu.liveGraphs() + " graph(s) and " + gpu.liveGraphExecs() + " executable(s) left after "
                        + "the context closed");
            }
        }
        return problems;
    }

    @Override
    public String toString() {
        return "simulated GPU";
    }

    /** A launch as a {@link JavaKernel} sees it, read from the simulated driver's view. */
    private record Launch(FakeKernel.Launch launch) implements JavaKernel.Launch {

        @Override
        public int gridX() {
            return launch.gridX();
        }

        @Override
        public int blockX() {
            return launch.blockX();
        }

        @Override
        public int sharedMemoryBytes() {
            return launch.sharedMemoryBytes();
        }

        @Override
        public long pointer(int index) {
            return launch.pointer(index);
        }

        @Override
        public int i32(int index) {
            return launch.i32(index);
        }

        @Override
        public long i64(int index) {
            return launch.i64(index);
        }

        @Override
        public float f32(int index) {
            return launch.f32(index);
        }

        @Override
        public double f64(int index) {
            return launch.f64(index);
        }

        @Override
        public MemorySegment memory(long address, long bytes) {
            return launch.memory(address, bytes);
        }
    }
}
