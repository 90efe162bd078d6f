package dev.gatun.cuda.testing;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.internal.driver.Driver;
import dev.gatun.cuda.internal.driver.DriverApi;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/** Builds a {@link Cuda} over a simulated driver, optionally behind a fault plan. */
public final class FakeCuda {

    /**
     * {@code Cuda(Driver)}, the package-private constructor through which gatun-core's own
     * {@code Cuda.system()} puts the process's driver under the API. Reached by a private lookup:
     * gatun-core opens its API package to gatun-testkit alone (its module-info says why), and on
     * the class path everything is open. A change of that constructor fails here at once, in every
     * testkit and runtime-core test, not in a user's test later.
     */
    private static final MethodHandle NEW_CUDA = cudaConstructor();

    private FakeCuda() {
    }

    private static MethodHandle cudaConstructor() {
        try {
            return MethodHandles.privateLookupIn(Cuda.class, MethodHandles.lookup())
                    .findConstructor(Cuda.class, MethodType.methodType(void.class, Driver.class));
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /**
     * A Cuda over {@code driver}: the simulated driver, or the real one with a fault plan in
     * front (gatun-testkit's GPU target).
     */
    public static Cuda over(Driver driver) {
        try {
            return (Cuda) NEW_CUDA.invokeExact(driver);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) {
            throw new AssertionError("Cuda(Driver) declares no checked exception", e);
        }
    }

    /**
     * A Cuda over {@code api} (no fault injection), whose every call pins a virtual thread to its
     * carrier for its duration, as a real (FFM) driver call does ({@link Carriers#pinned}).
     */
    public static Cuda over(DriverApi api) {
        return over(Driver.create(Carriers.pinned(api), "simulated driver"));
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
