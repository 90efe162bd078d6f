package dev.gatun.cuda.testing;

import dev.gatun.cuda.internal.context.SwitchPoint;
import dev.gatun.cuda.internal.driver.DriverApi;
import java.lang.foreign.MemorySegment;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;

/**
 * A {@link DriverApi} in front of another (the simulated driver) that can hold a thread inside a
 * chosen driver call until the test lets it go, so that a race between two threads is forced
 * rather than sampled: stop thread A in function F ({@link #stopBefore} or {@link #stopAfter}
 * the real call, on its n-th matching call, on a chosen thread only), run thread B's step, then
 * {@link Stop#release()} A. A stop can also make the call throw instead ({@link Stop#throwing}),
 * for errors the driver seam never returns, such as an {@link Error}.
 *
 * <p>Every wait here is bounded by {@link #GUARD} and fails the test with an {@link AssertionError}
 * when it runs out: a deadlock guard, never a timing assertion.
 *
 * <p>Built {@linkplain #over(FakeDriverApi) over the simulated driver}, it also reports the span
 * of every call to it, so that the simulator can flag calls the driver forbids to overlap (see
 * {@link SimulatedHostCalls}): a thread held inside a call is inside it.
 *
 * <p>{@link #around} hooks every call for a scheduler ({@link ScheduleExplorer}); stops apply
 * inside the hook.
 *
 * <p>The stream protocol's Java steps between driver calls ({@link SwitchPoint}: a use listing
 * its stream, a close reading them, a hold, the deferral...) go through the same hooks and stops
 * once {@link #interceptSwitchPoints()} routes them here, each as a call named by
 * {@link #label(SwitchPoint)} with no arguments: {@link #stopAt} holds a thread at one, as
 * {@link #stopBefore} does at a driver call. Switch points are one per JVM, so the last
 * interposer that asked gets them until {@link #releaseSwitchPoints()}.
 */
public final class Interposer {

    /** The deadlock guard of every wait of an interleaving test. */
    public static final Duration GUARD = Duration.ofSeconds(10);

    /** What runs a call; {@link #PASS} makes the real one. */
    @FunctionalInterface
    public interface Around {
        Object call(String function, Object[] args, Callable<Object> real) throws Throwable;
    }

    public static final Around PASS = (function, args, real) -> real.call();
    private static final Object[] NO_ARGUMENTS = {};

    private final DriverApi api;
    private final FakeDriverApi gpu;
    private final List<Stop> stops = new CopyOnWriteArrayList<>();
    private volatile Around around = PASS;

    private Interposer(DriverApi next, FakeDriverApi gpu) {
        this.gpu = gpu;
        this.api = (DriverApi) Proxy.newProxyInstance(DriverApi.class.getClassLoader(), new Class<?>[] {DriverApi.class},
                (proxy, method, args) -> {
                    Callable<Object> real = () -> invoke(method, next, args);
                    if (method.getDeclaringClass() == Object.class || !method.getName().startsWith("cu")) {
                        return real.call(); // Object's methods
                    }
                    return intercept(method.getName(), args, real);
                });
    }

    /** In front of the simulated driver {@code gpu}, reporting each call's span to it. */
    public static Interposer over(FakeDriverApi gpu) {
        return new Interposer(gpu.api(), gpu);
    }

    /** In front of any driver. */
    public static Interposer over(DriverApi next) {
        return new Interposer(next, null);
    }

    /** The driver to build Gatun on ({@link FakeCuda#over(DriverApi)}, or a {@link Simulated}). */
    public DriverApi api() {
        return api;
    }

    /** The simulated driver behind, or null when built over another driver. */
    FakeDriverApi gpu() {
        return gpu;
    }

    /** Runs every call through {@code hook} from now on ({@link #PASS} to stop). */
    public void around(Around hook) {
        around = hook;
    }

    /**
     * Routes every switch point reached from now on (by any thread) through this interposer's
     * hook and stops, until {@link #releaseSwitchPoints()} or another interposer asks.
     */
    public void interceptSwitchPoints() {
        SwitchPoint.listen(point -> {
            String label = label(point);
            try {
                around.call(label, NO_ARGUMENTS, () -> throughStops(label, NO_ARGUMENTS, () -> null));
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable t) {
                throw new AssertionError("a switch point's hook threw " + t, t);
            }
        });
    }

    /** Stops routing switch points to any interposer. */
    public static void releaseSwitchPoints() {
        SwitchPoint.listen(null);
    }

    /** The name under which {@code point} passes hooks and stops, e.g. {@code <USAGE_ADD>}. */
    public static String label(SwitchPoint point) {
        return "<" + point + ">";
    }

    /** Holds the thread reaching {@code point} (routed here, see {@link #interceptSwitchPoints()}) just before its step. */
    public Stop stopAt(SwitchPoint point) {
        interceptSwitchPoints();
        return add(new Stop(label(point), true));
    }

    /** Holds the thread making the matching call before the real call is made. */
    public Stop stopBefore(String function) {
        return add(new Stop(function, true));
    }

    /** Holds the thread making the matching call after the real call returned. */
    public Stop stopAfter(String function) {
        return add(new Stop(function, false));
    }

    private Stop add(Stop stop) {
        stops.add(stop);
        return stop;
    }

    private Object intercept(String function, Object[] args, Callable<Object> real) throws Throwable {
        if (gpu != null) {
            gpu.hostCallBegins(function, args);
        }
        try {
            return around.call(function, args, () -> throughStops(function, args, real));
        } finally {
            if (gpu != null) {
                gpu.hostCallEnds(function, args);
            }
        }
    }

    private Object throughStops(String function, Object[] args, Callable<Object> real) throws Exception {
        Stop before = match(function, args, true);
        if (before != null) {
            before.hold(args);
        }
        Object result = real.call();
        Stop after = match(function, args, false);
        if (after != null) {
            after.hold(args);
        }
        return result;
    }

    private Stop match(String function, Object[] args, boolean before) {
        for (Stop s : stops) {
            if (s.before == before && s.matches(function, args)) {
                return s;
            }
        }
        return null;
    }

    private static Object invoke(Method method, Object target, Object[] args) throws Exception {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            if (e.getCause() instanceof Exception x) {
                throw x;
            }
            throw (Error) e.getCause();
        }
    }

    /** Whether {@code args[i]} is a handle (a MemorySegment) at {@code handle}'s address. */
    public static Predicate<Object[]> argument(int i, MemorySegment handle) {
        return args -> args[i] instanceof MemorySegment m && m.address() == handle.address();
    }

    /**
     * One place where a thread is held: function {@link #function}, before or after the real call,
     * on the {@link #onCall n}-th call that matches the thread and argument filters (the first by
     * default). It fires once: later matching calls pass.
     */
    public static final class Stop {
        private final String function;
        private final boolean before;
        private final AtomicInteger matched = new AtomicInteger();
        private final CountDownLatch arrived = new CountDownLatch(1);
        private final CountDownLatch released = new CountDownLatch(1);
        private volatile int call = 1;
        private volatile String threadName;
        private volatile Predicate<Object[]> filter = args -> true;
        private volatile Throwable toThrow;
        private volatile Thread holding;
        private volatile Object[] arguments;

        private Stop(String function, boolean before) {
            this.function = function;
            this.before = before;
        }

        /** Fires on the {@code n}-th matching call (1-based) instead of the first. */
        public Stop onCall(int n) {
            call = n;
            return this;
        }

        /** Matches only calls made on the thread named {@code name}. */
        public Stop onThread(String name) {
            threadName = name;
            return this;
        }

        /** Matches only calls whose arguments pass {@code test} (e.g. {@link Interposer#argument}). */
        public Stop where(Predicate<Object[]> test) {
            filter = test;
            return this;
        }

        /** Instead of holding the thread, makes the call throw {@code t} (before the real call, or after it). */
        public Stop throwing(Throwable t) {
            toThrow = t;
            return this;
        }

        private boolean matches(String f, Object[] args) {
            if (!function.equals(f) || threadName != null && !threadName.equals(Thread.currentThread().getName())
                    || !filter.test(args)) {
                return false;
            }
            return matched.incrementAndGet() == call;
        }

        private void hold(Object[] args) throws Exception {
            arguments = args.clone();
            holding = Thread.currentThread();
            Throwable t = toThrow;
            arrived.countDown();
            if (t != null) {
                throwUnchecked(t);
            }
            await(released, "be released from " + this);
        }

        @SuppressWarnings("unchecked")
        private static <E extends Throwable> void throwUnchecked(Throwable t) throws E {
            throw (E) t;
        }

        /** Whether a thread has reached this stop. */
        public boolean arrived() {
            return arrived.getCount() == 0;
        }

        /** Waits until a thread is held here (or the call threw); returns that thread. */
        public Thread awaitArrival() {
            await(arrived, "reach " + this);
            return holding;
        }

        /**
         * Waits until a thread is held here (true), or {@code other} has finished or waits on
         * something else, the usual reason being a lock held by a thread this test holds (false).
         */
        public boolean awaitArrivalOr(Background<?> other) {
            long deadline = System.nanoTime() + GUARD.toNanos();
            while (!arrived()) {
                if (other.finished()) {
                    return arrived();
                }
                if (ThreadWaits.looksWaiting(other.thread())) {
                    other.awaitFinishedOrWaiting(); // held here counts as waiting too: arrived() tells
                    return arrived();
                }
                if (System.nanoTime() > deadline) {
                    throw new AssertionError(other.thread().getName() + " neither reached " + this
                            + " nor finished nor waited within " + GUARD);
                }
                Thread.onSpinWait();
            }
            return true;
        }

        /** Lets the held thread go on. */
        public void release() {
            released.countDown();
        }

        /** The arguments of the call that fired this stop (null before). */
        public Object[] arguments() {
            return arguments;
        }

        @Override
        public String toString() {
            return "the stop " + (before ? "before " : "after ") + function + (call > 1 ? " (call " + call + ")" : "")
                    + (threadName != null ? " on thread '" + threadName + "'" : "");
        }

        private static void await(CountDownLatch latch, String what) {
            try {
                if (!latch.await(GUARD.toMillis(), TimeUnit.MILLISECONDS)) {
                    throw new AssertionError("a thread did not " + what + " within " + GUARD + " (a deadlock guard)");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted while waiting to " + what, e);
            }
        }
    }
}
