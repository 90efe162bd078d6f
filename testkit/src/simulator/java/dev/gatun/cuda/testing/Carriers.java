package dev.gatun.cuda.testing;

import dev.gatun.cuda.internal.driver.DriverApi;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
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
 *
 * <p>A real driver call is an FFM downcall, which pins a virtual thread to its carrier until it
 * returns. A simulated one is Java code (a fault plan's lock, an interposer, the simulator's
 * lock), where a contended lock would unmount the thread and let it resume on another carrier in
 * the middle of the "call". {@link #pinned(DriverApi)} pins it for each call instead, through
 * {@code jdk.internal.vm.Continuation.pin}, which needs
 * {@code --add-exports java.base/jdk.internal.vm=ALL-UNNAMED} (runtime-core's tests have it too;
 * without it nothing is pinned). An {@link Interposer} stop inside such a call then holds the
 * carrier too, as a driver call that blocks does: a test that stops a virtual thread there needs
 * a carrier to spare for the threads that must go on.
 */
public final class Carriers {

    private static final MethodHandle CURRENT_CARRIER = currentCarrierHandle();
    private static final MethodHandle PIN = continuationHandle("pin");
    private static final MethodHandle UNPIN = continuationHandle("unpin");

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

    private static MethodHandle continuationHandle(String name) {
        try {
            return MethodHandles.lookup().findStatic(Class.forName("jdk.internal.vm.Continuation"), name,
                    MethodType.methodType(void.class));
        } catch (ReflectiveOperationException e) {
            return null; // jdk.internal.vm not exported to this module: nothing is pinned
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

    /**
     * {@code next}, each call of which pins a virtual thread to its carrier for its duration, as
     * an FFM downcall does: a contended lock inside blocks the carrier, as native code would,
     * instead of moving the thread to another one.
     */
    public static DriverApi pinned(DriverApi next) {
        if (PIN == null) {
            return next;
        }
        return (DriverApi) Proxy.newProxyInstance(DriverApi.class.getClassLoader(), new Class<?>[] {DriverApi.class},
                (proxy, method, args) -> {
                    boolean pin = Thread.currentThread().isVirtual();
                    if (pin) {
                        PIN.invokeExact();
                    }
                    try {
                        return method.invoke(next, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    } finally {
                        if (pin) {
                            UNPIN.invokeExact();
                        }
                    }
                });
    }
}
