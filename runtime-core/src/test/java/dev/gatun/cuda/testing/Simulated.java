package dev.gatun.cuda.testing;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.ContextOptions;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DevicePoolOptions;

/** A simulated GPU with a fault plan in front of it: one per test. */
public final class Simulated {
    public final FakeDriverApi gpu;
    public final FaultPlan faults = new FaultPlan();
    public final Cuda cuda;

    public Simulated() {
        this(new FakeDriverApi());
    }

    public Simulated(FakeDriverApi gpu) {
        this.gpu = gpu;
        this.cuda = FakeCuda.over(gpu, faults);
    }

    /**
     * A simulated GPU whose calls pass the fault plan, then {@code interposer} (built
     * {@linkplain Interposer#over(FakeDriverApi) over that GPU}), so that a test can hold a thread
     * inside a driver call.
     */
    public Simulated(Interposer interposer) {
        if (interposer.gpu() == null) {
            throw new IllegalArgumentException("build the interposer with Interposer.over(FakeDriverApi)");
        }
        this.gpu = interposer.gpu();
        this.cuda = FakeCuda.over(FaultInjection.around(interposer.api(), faults));
    }

    /** Device 0's context with the device pool off, so that every close reaches the driver. */
    public CudaContext context() {
        return cuda.device(0).context(ContextOptions.defaults().withDevicePool(new DevicePoolOptions(0, false)));
    }

    /** Device 0's context with the default device pool. */
    public CudaContext pooledContext() {
        return cuda.device(0).context(ContextOptions.defaults());
    }
}
