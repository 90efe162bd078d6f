package dev.gatun.cuda.testing;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Constructor;
import java.util.concurrent.Executor;

/**
 * The OS threads that carry virtual threads, as the simulated driver needs them: CUDA's current
 * context belongs to the OS thread, which for a virtual thread is the carrier it is mounted on
 * at the time of the call. A platform thread is its own carrier.
 *
 * <p>The JDK names a virtual thread's carrier only inside {@code java.lang}
 * ({@code Thread.currentCarrierThread}), and builds virtual threads on a scheduler of the
 * caller's choosing only there ({@code ThreadBuilders.VirtualThreadBuilder(Executor)}, which the
 * JDK's own tests use). Both are reached by reflection, which needs
 * {@code --add-opens java.base/java.lang=ALL-UNNAMED}: runtime-core's tests run with it (its pom's
 * {@code gatun.test.jvm.args}). Elsewhere (testkit users, the other modules' tests) the carrier
 * cannot be seen, and a virtual thread counts as its own carrier, which is how the simulated
 * driver tracked every thread before; {@link #visible()} says which.
 */
public final class Carriers {

    private static final MethodHandle CURRENT_CARRIER = currentCarrierHandle();

    private Carriers() {
    }

    private static MethodHandle currentCarrierHandle() {
        try {
            MethodHandles.Lookup inThread = MethodHandles.privateLookupIn(Thread.class, MethodHandles.lookup());
            return inThread.findStatic(Thread.class, "currentCarrierThread", MethodType.methodType(Thread.class));
        } catch (IllegalAccessException | NoSuchMethodException e) {
            return null; // java.lang not opened to this module: virtual threads count as their own carriers
        }
    }

    /** Whether {@link #current()} sees a virtual thread's carrier (java.lang is opened to the tests). */
    public static boolean visible() {
        return CURRENT_CARRIER != null;
    }

    /**
     * The OS thread the calling thread runs on now: itself for a platform thread; for a virtual
     * thread, its carrier of the moment (itself when {@linkplain #visible() not visible}).
     */
    public static Thread current() {
        Thread t = Thread.currentThread();
        if (!t.isVirtual() || CURRENT_CARRIER == null) {
            return t;
        }
        try {
            return (Thread) CURRENT_CARRIER.invokeExact();
        } catch (Throwable e) {
            throw new AssertionError("Thread.currentCarrierThread failed", e);
        }
    }

    /**
     * A builder of virtual threads that {@code scheduler} mounts: each time one is started or
     * unparked, the scheduler gets the task that runs it until its next park, and the thread that
     * runs that task is its carrier until then. A test picks the carrier of each mount this way.
     *
     * @throws IllegalStateException when java.lang is not opened to the tests
     */
    public static Thread.Builder.OfVirtual virtualThreadsOn(Executor scheduler) {
        try {
            Class<?> builder = Class.forName("java.lang.ThreadBuilders$VirtualThreadBuilder");
            Constructor<?> withScheduler = builder.getDeclaredConstructor(Executor.class);
            withScheduler.setAccessible(true);
            return (Thread.Builder.OfVirtual) withScheduler.newInstance(scheduler);
        } catch (ReflectiveOperationException | RuntimeException e) {
            throw new IllegalStateException("virtual threads on a chosen scheduler need "
                    + "--add-opens java.base/java.lang=ALL-UNNAMED in the test JVM's arguments", e);
        }
    }
}
