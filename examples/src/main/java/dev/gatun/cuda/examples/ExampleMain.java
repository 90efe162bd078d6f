package dev.gatun.cuda.examples;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.doctor.Doctor;
import java.util.function.Predicate;

/**
 * What every example's {@code main} does around its core: find the driver, run the core on the
 * real GPU, and turn the outcome into an exit status. The cores take a {@link Cuda} or a
 * context as a parameter, so that the CPU tests can run them on the simulated driver.
 *
 * <p>Exit status: 0 when the program's results match what the CPU computed, 1 when they do
 * not, 3 when there is no usable GPU (no driver, no device, or a library the driver does not
 * bring: NVRTC, or cuBLAS for {@code BlasGemm}), after Gatun's own diagnosis on standard error
 * ({@link Doctor#diagnose}); an exception from Gatun itself ends the program with the JVM's
 * status 1 and its stack trace.
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
        // snippet:doctor
        if (!Cuda.isAvailable() || Cuda.system().deviceCount() == 0) {
            System.err.println(program + " needs an NVIDIA GPU and its driver. What Gatun finds here:");
            Doctor.diagnose(System.err);   // dev.gatun.cuda.doctor: the report `gatun doctor` prints
            return NO_GPU;
        }
        // end-snippet
        try {
            boolean match = example.test(Cuda.system());
            System.out.println(program + (match ? ": results match the CPU" : ": RESULTS DIFFER from the CPU"));
            return match ? MATCH : MISMATCH;
        } catch (CudaUnavailableException e) {
            // NVRTC or cuBLAS, which the driver does not bring: its message lists every path
            // tried, and the report says the same beside the rest.
            System.err.println(program + ": needs a library the driver does not bring: " + e.getMessage());
            Doctor.diagnose(System.err);
            return NO_GPU;
        }
    }
}
