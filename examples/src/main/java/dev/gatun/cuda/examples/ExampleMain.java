package dev.gatun.cuda.examples;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaUnavailableException;
import java.util.function.Predicate;

/**
 * What every example's {@code main} does around its core: find the driver, run the core on the
 * real GPU, and turn the outcome into an exit status. The cores take a {@link Cuda} or a
 * context as a parameter, so that the CPU tests can run them on the simulated driver.
 *
 * <p>Exit status: 0 when the program's results match what the CPU computed, 1 when they do
 * not, 3 when there is no usable GPU (no driver, no device, or no NVRTC); an exception from
 * Gatun itself ends the program with the JVM's status 1 and its stack trace.
 */
final class ExampleMain {

    static final int MATCH = 0;
    static final int MISMATCH = 1;
    static final int NO_GPU = 3;

    private ExampleMain() {
    }

    /** Runs {@code example} on the process's driver and exits with its status (see the class comment). */
    static void exit(String program, Predicate<Cuda> example) {
        System.exit(status(program, example));
    }

    private static int status(String program, Predicate<Cuda> example) {
        try {
            Cuda cuda = Cuda.system();
            if (cuda.deviceCount() == 0) {
                System.err.println(program + ": the CUDA driver reports no device; run it on a machine with an "
                        + "NVIDIA GPU");
                return NO_GPU;
            }
            boolean match = example.test(cuda);
            System.out.println(program + (match ? ": results match the CPU" : ": RESULTS DIFFER from the CPU"));
            return match ? MATCH : MISMATCH;
        } catch (CudaUnavailableException e) {
            // Thrown by the first call that needs the driver or NVRTC; its message lists every path tried.
            System.err.println(program + ": needs an NVIDIA GPU with its driver (and NVRTC to compile kernels): "
                    + e.getMessage());
            return NO_GPU;
        }
    }
}
