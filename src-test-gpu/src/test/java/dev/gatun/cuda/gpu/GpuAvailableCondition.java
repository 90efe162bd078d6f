package dev.gatun.cuda.gpu;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaUnavailableException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The condition behind {@link RequiresGpu}. */
final class GpuAvailableCondition implements ExecutionCondition {

    /** JUnit configuration parameter (or system property): true makes a missing GPU a failure. */
    static final String REQUIRED_PARAMETER = "gatun.gpu.required";

    private static final Logger log = LoggerFactory.getLogger(GpuAvailableCondition.class);
    private static final AtomicBoolean DETAILS_LOGGED = new AtomicBoolean();

    @Override
    public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
        if (Cuda.isAvailable()) {
            return ConditionEvaluationResult.enabled("CUDA driver loaded and initialized");
        }
        CudaUnavailableException unavailable = unavailableReason();
        if (context.getConfigurationParameter(REQUIRED_PARAMETER, Boolean::parseBoolean).orElse(false)) {
            throw unavailable;
        }
        String reason = "no CUDA driver/GPU: " + summary(unavailable)
                + "; GPU tests run only on a GPU host (see src-test-gpu/README.md)";
        // Surefire and the console launcher show the reason per class. The full message, with
        // every path the loader tried, is what to read when a GPU host skips unexpectedly;
        // it is the same for every class, so it is logged once.
        if (DETAILS_LOGGED.compareAndSet(false, true)) {
            log.warn("{} skipped: {}\n{}", context.getDisplayName(), reason, unavailable.getMessage());
        } else {
            log.warn("{} skipped: {}", context.getDisplayName(), reason);
        }
        return ConditionEvaluationResult.disabled(reason);
    }

    /** The message's first line; when that line introduces the list of attempts, their number instead of the list. */
    private static String summary(CudaUnavailableException unavailable) {
        String first = unavailable.getMessage().lines().findFirst().orElse("");
        return first.endsWith(":") ? first + " " + unavailable.attempts().size() + " places, listed in the log" : first;
    }

    private static CudaUnavailableException unavailableReason() {
        try {
            Cuda.system();
        } catch (CudaUnavailableException e) {
            return e;
        }
        throw new IllegalStateException("Cuda.isAvailable() is false, yet Cuda.system() returned a driver");
    }
}
