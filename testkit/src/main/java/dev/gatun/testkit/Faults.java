package dev.gatun.testkit;

import dev.gatun.cuda.internal.driver.CuResults;
import dev.gatun.cuda.internal.driver.DriverApi;
import dev.gatun.cuda.testing.FaultPlan;
import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * Driver calls made to fail on purpose: the Nth call of a named driver function returns a
 * chosen {@code CUresult} instead of its own, and Gatun reports it as it would the driver's
 * (a typed exception, a poisoned context for a sticky error). Faults work on both targets: every
 * driver call of a {@link GpuUnderTest}'s context passes through them, on the simulator and on
 * a real GPU alike. They also count the calls, so a test can assert how many of a kind its code
 * made.
 *
 * <p>Functions are named as the driver exports them, version suffix included:
 * {@code cuMemAlloc_v2}, {@code cuLaunchKernel}, {@code cuGraphLaunch}, {@code cuEventRecord},
 * {@code cuStreamWaitEvent}, ... ({@link #ANY_FUNCTION} names them all). Results are
 * {@code CUresult} numbers, such as {@code CudaDriver.CUDA_ERROR_OUT_OF_MEMORY()}
 * ({@code dev.gatun.cuda.bindings.driver.CudaDriver}, which comes with gatun-core). Calls are
 * counted from the moment a fault is planned: "the 2nd call" is the second one after the
 * {@code fail...} call that planned it. Thread-safe.
 */
public final class Faults {

    /** A function name that matches every driver function, as if the driver failed everything. */
    public static final String ANY_FUNCTION = FaultPlan.ANY;

    /** The driver functions Gatun calls, as named in its driver seam. */
    private static final Set<String> FUNCTIONS = Arrays.stream(DriverApi.class.getMethods())
            .filter(m -> m.getReturnType() == int.class && m.getName().startsWith("cu"))
            .map(Method::getName).collect(Collectors.toUnmodifiableSet());

    private final FaultPlan plan;

    Faults(FaultPlan plan) {
        this.plan = plan;
        plan.countCalls();
    }

    /**
     * Makes the {@code nth} call of {@code function} from now fail with {@code error}: the call
     * is not made, and Gatun sees {@code error} as its result.
     *
     * @param function a driver function, e.g. {@code cuMemAlloc_v2}
     * @param nth which call, from 1 (the next one)
     * @param error the CUresult it returns, not {@code CUDA_SUCCESS}
     * @return these faults, for chaining
     * @throws IllegalArgumentException for an unknown function or result, or {@code nth < 1}
     */
    public Faults failCall(String function, int nth, int error) {
        return failCalls(function, nth, 1, error);
    }

    /**
     * Makes {@code count} calls of {@code function} fail with {@code error}, from the
     * {@code first} one from now: none of them is made. A retrying caller (Gatun's out-of-memory
     * ladder retries an allocation after freeing what it can) meets the fault on each retry the
     * count covers. Gatun tries a device allocation that ran out of memory at least twice (once
     * more after trimming its pool, or after the ladder's last rung) before it throws: fail two
     * calls to make one allocation fail, while nothing can be freed.
     *
     * @param function a driver function, e.g. {@code cuMemAlloc_v2}
     * @param first the first failing call, from 1 (the next one)
     * @param count how many calls fail, at least 1
     * @param error the CUresult they return, not {@code CUDA_SUCCESS}
     * @return these faults, for chaining
     * @throws IllegalArgumentException for an unknown function or result, or a count or position below 1
     */
    public Faults failCalls(String function, int first, int count, int error) {
        if (count < 1) {
            throw new IllegalArgumentException("count is " + count + "; at least one call must fail");
        }
        plan.inject(check(function), check(error), FaultPlan.Mode.REPLACE, skip(first), count);
        return this;
    }

    /**
     * Makes every call of {@code function} fail with {@code error}, from the {@code nth} one from
     * now, until {@link #clear()}.
     *
     * @param function a driver function, or {@link #ANY_FUNCTION}
     * @param nth the first failing call, from 1 (the next one)
     * @param error the CUresult they return, not {@code CUDA_SUCCESS}
     * @return these faults, for chaining
     * @throws IllegalArgumentException for an unknown function or result, or {@code nth < 1}
     */
    public Faults failFrom(String function, int nth, int error) {
        plan.inject(check(function), check(error), FaultPlan.Mode.REPLACE, skip(nth), FaultPlan.ALWAYS);
        return this;
    }

    /**
     * Makes the {@code nth} call of {@code function} from now happen, then report {@code error}
     * instead of its own result: the work was queued, but the caller was told it failed. This is
     * how an uncertain submission looks (a launch or an event record that may or may not have
     * run), which Gatun must never take as done.
     *
     * @param function a driver function, e.g. {@code cuLaunchKernel}
     * @param nth which call, from 1 (the next one)
     * @param error the CUresult it reports, not {@code CUDA_SUCCESS}
     * @return these faults, for chaining
     * @throws IllegalArgumentException for an unknown function or result, or {@code nth < 1}
     */
    public Faults reportFailureAfter(String function, int nth, int error) {
        plan.inject(check(function), check(error), FaultPlan.Mode.OVERRIDE, skip(nth), 1);
        return this;
    }

    /**
     * {@return how many times {@code function} was called (made or failed) since these faults
     * were made or last {@linkplain #clear() cleared}}
     *
     * @param function a driver function, or {@link #ANY_FUNCTION} for the calls of all of them
     * @throws IllegalArgumentException for an unknown function
     */
    public int calls(String function) {
        return function.equals(ANY_FUNCTION) ? plan.totalCalls() : plan.calls(check(function));
    }

    /** {@return every driver function called since these faults were made or last cleared, with its count, by name} */
    public Map<String, Integer> calls() {
        return new TreeMap<>(plan.counts());
    }

    /** Removes every planned fault and resets the counts: from now on every call reaches the driver. */
    public void clear() {
        plan.clear();
        plan.countCalls();
    }

    private static String check(String function) {
        if (function.equals(ANY_FUNCTION) || FUNCTIONS.contains(function)) {
            return function;
        }
        // The usual slip is a missing version suffix (cuMemAlloc for cuMemAlloc_v2); else, names that start alike.
        String near = FUNCTIONS.stream().filter(f -> f.startsWith(function + "_v")).sorted()
                .collect(Collectors.joining(", "));
        if (near.isEmpty()) {
            near = FUNCTIONS.stream().filter(f -> f.startsWith(function) || function.startsWith(f)).sorted()
                    .collect(Collectors.joining(", "));
        }
        throw new IllegalArgumentException("Gatun calls no driver function named '" + function + "'"
                + (near.isEmpty() ? "" : "; did you mean " + near + "?") + " (functions are named as the driver exports "
                + "them, version suffix included)");
    }

    private static int check(int error) {
        if (error == 0 || CuResults.name(error).startsWith("CUresult ")) {
            throw new IllegalArgumentException("a fault must be a CUDA error (a CUDA_ERROR_* value of CudaDriver), not "
                    + CuResults.name(error));
        }
        return error;
    }

    private static int skip(int nth) {
        if (nth < 1) {
            throw new IllegalArgumentException("calls are counted from 1 (the next call), not " + nth);
        }
        return nth - 1;
    }
}
