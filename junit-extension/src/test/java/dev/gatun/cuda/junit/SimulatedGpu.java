package dev.gatun.cuda.junit;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.testing.Simulated;
import java.util.function.Supplier;

/**
 * The {@link GpuExtension#CUDA_SUPPLIER_PARAMETER} of fixture runs: the simulated GPU the
 * running test chose with {@link #use}. JUnit makes the supplier from its name, so the choice
 * travels through this static field; fixture runs are not concurrent.
 */
public final class SimulatedGpu implements Supplier<Cuda> {

    private static volatile Simulated current;

    /** Makes {@code sim} the GPU of the next fixture runs; returns it. */
    static Simulated use(Simulated sim) {
        current = sim;
        return sim;
    }

    /** The GPU chosen by {@link #use}, for fixtures that inject faults into it. */
    static Simulated current() {
        Simulated sim = current;
        if (sim == null) {
            throw new IllegalStateException("no simulated GPU chosen: call SimulatedGpu.use first");
        }
        return sim;
    }

    @Override
    public Cuda get() {
        return current().cuda;
    }
}
