package dev.gatun.cuda.faults;

import org.junit.jupiter.api.function.Executable;

/**
 * One row of the fault table: a driver function, a small piece of public-API code that calls it
 * (the scenario), the error to inject, and what must follow when the call fails before it is
 * made ({@code before}: the driver did nothing) and after it was made ({@code after}: the work
 * was done, or queued, and the caller was told it failed: the uncertain case).
 *
 * @param function the driver function, as in driver.functions
 * @param scenario what the scenario does, in words
 * @param error the CUresult to inject
 * @param times how many consecutive calls fail (1 unless a recovery would hide the failure)
 * @param devices how many simulated devices the scenario needs
 * @param driverVersion the CUDA version the simulated driver reports (13.0 unless the row needs an older one)
 * @param setUp opens what the call needs and returns the call itself
 * @param withoutFault what the scenario does when nothing fails ({@link Outcome#SUCCEEDS} unless it
 *     provokes an error of its own)
 */
record FaultCase(String function, String scenario, int error, int times, int devices, int driverVersion,
        Scenario setUp, Outcome withoutFault, Outcome before, Outcome after) {

    /** Opens what the call needs in {@code w} (registering it to be closed afterwards), and returns the call. */
    @FunctionalInterface
    interface Scenario {
        Executable open(FaultWorld w) throws Throwable;
    }

    FaultCase {
        if (times < 1) {
            throw new IllegalArgumentException("times must be at least 1");
        }
    }

    /** The same scenario with {@code times} consecutive failures. */
    FaultCase failing(int n) {
        return new FaultCase(function, scenario, error, n, devices, driverVersion, setUp, withoutFault, before, after);
    }

    /** The same scenario on a simulated machine with {@code n} devices. */
    FaultCase onDevices(int n) {
        return new FaultCase(function, scenario, error, times, n, driverVersion, setUp, withoutFault, before, after);
    }

    /** The same scenario on a simulated driver for CUDA {@code version} (1000 * major + 10 * minor). */
    FaultCase onDriver(int version) {
        return new FaultCase(function, scenario, error, times, devices, version, setUp, withoutFault, before, after);
    }

    /** The scenario, with no fault injected, ends as {@code outcome}. */
    FaultCase withoutFault(Outcome outcome) {
        return new FaultCase(function, scenario, error, times, devices, driverVersion, setUp, outcome, before, after);
    }

    @Override
    public String toString() {
        return function + ": " + scenario;
    }
}
