package dev.gatun.cuda.testing;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.internal.driver.Driver;
import dev.gatun.cuda.internal.driver.DriverApi;

/** Builds a {@link Cuda} over a simulated driver, optionally behind a fault plan. */
public final class FakeCuda {

    private FakeCuda() {
    }

    /**
     * A Cuda over {@code api} (no fault injection), whose every call pins a virtual thread to its
     * carrier for its duration, as a real (FFM) driver call does ({@link Carriers#pinned}).
     */
    public static Cuda over(DriverApi api) {
        return dev.gatun.cuda.TestHooks.cuda(Driver.create(Carriers.pinned(api), "simulated driver"));
    }

    /** A Cuda over the simulated driver {@code fake} (no fault injection). */
    public static Cuda over(FakeDriverApi fake) {
        return over(fake.api());
    }

    /** A Cuda over {@code fake}, with every call going through {@code plan}. */
    public static Cuda over(FakeDriverApi fake, FaultPlan plan) {
        return over(FaultInjection.around(fake.api(), plan));
    }
}
