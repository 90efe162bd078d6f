package dev.gatun.cuda.testing;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.internal.driver.FaultPlan;

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

    public CudaContext context() {
        return cuda.device(0).context();
    }
}
