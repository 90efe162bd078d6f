package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.load.GeneratedConstants;
import java.util.Map;
import java.util.Set;

/**
 * CUresult names without a driver, read from the generated constants (the header's
 * {@code CUDA_SUCCESS} / {@code CUDA_ERROR_*} enumerators), and the set of sticky errors.
 */
public final class CuResults {

    /**
     * Errors after which the context is unusable: cuda.h documents each as leaving the process
     * "in an inconsistent state" that needs a relaunch (plus ECC uncorrectable, which the
     * driver also reports for every later call).
     */
    private static final Set<Integer> STICKY = Set.of(
            CudaDriver.CUDA_ERROR_ECC_UNCORRECTABLE(),
            CudaDriver.CUDA_ERROR_CONTAINED(),
            CudaDriver.CUDA_ERROR_ILLEGAL_ADDRESS(),
            CudaDriver.CUDA_ERROR_LAUNCH_TIMEOUT(),
            CudaDriver.CUDA_ERROR_HARDWARE_STACK_ERROR(),
            CudaDriver.CUDA_ERROR_ILLEGAL_INSTRUCTION(),
            CudaDriver.CUDA_ERROR_MISALIGNED_ADDRESS(),
            CudaDriver.CUDA_ERROR_INVALID_ADDRESS_SPACE(),
            CudaDriver.CUDA_ERROR_INVALID_PC(),
            CudaDriver.CUDA_ERROR_LAUNCH_FAILED(),
            CudaDriver.CUDA_ERROR_TENSOR_MEMORY_LEAK(),
            CudaDriver.CUDA_ERROR_MPS_CLIENT_TERMINATED(),
            CudaDriver.CUDA_ERROR_EXTERNAL_DEVICE());

    /** The result of a poll whose work is still running. */
    public static final int NOT_READY = CudaDriver.CUDA_ERROR_NOT_READY();
    /** The driver does not know the handle a call named. */
    public static final int INVALID_HANDLE = CudaDriver.CUDA_ERROR_INVALID_HANDLE();
    /** What a call on a poisoned context reports without reaching the driver. */
    public static final int CONTEXT_IS_DESTROYED = CudaDriver.CUDA_ERROR_CONTEXT_IS_DESTROYED();

    private static final Map<Integer, String> NAMES = GeneratedConstants.names(CudaDriver.class,
            n -> n.equals("CUDA_SUCCESS") || n.startsWith("CUDA_ERROR_"));

    private CuResults() {
    }

    /** The enumerator's name, e.g. {@code CUDA_ERROR_OUT_OF_MEMORY}, or {@code CUresult <n>}. */
    public static String name(int result) {
        String name = NAMES.get(result);
        return name != null ? name : "CUresult " + result;
    }

    /** Whether this error poisons its context for the rest of the process. */
    public static boolean isSticky(int result) {
        return STICKY.contains(result);
    }
}
