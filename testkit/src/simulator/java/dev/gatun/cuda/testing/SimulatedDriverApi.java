package dev.gatun.cuda.testing;

import dev.gatun.cuda.internal.driver.DriverApi;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * The {@link DriverApi} of the simulated driver: a proxy that hands each driver function to the
 * one area object (SimulatedDevices, SimulatedStreams, ...) declaring a public method with the
 * same name, parameters and result. An area implements only the functions tests need, so a
 * function added to driver.functions costs nothing here until a test calls it; then the call
 * fails with an {@link UnsupportedOperationException} naming the function.
 *
 * <p>Every call holds one lock (the {@link FakeDriverApi} whose state the areas share), as the
 * test controls do, so the simulated GPU changes state one call at a time. A call runs on the
 * carrier it began on ({@link Carriers#current()}, read before the lock), as a real downcall pins
 * a virtual thread to its carrier until it returns, whatever the lock's wait does to it here.
 */
final class SimulatedDriverApi implements InvocationHandler {

    private record Target(Object area, Method method) {
    }

    /** DriverApi's functions by name: C functions, so no name is overloaded. */
    private static final Map<String, Method> FUNCTIONS = Arrays.stream(DriverApi.class.getMethods())
            .collect(Collectors.toMap(Method::getName, m -> m));

    /** Per area class, computed once: each driver function it simulates, and its method that does. */
    private static final ClassValue<Map<Method, Method>> SIMULATIONS = new ClassValue<>() {
        @Override
        protected Map<Method, Method> computeValue(Class<?> area) {
            Map<Method, Method> found = new HashMap<>();
            for (Method m : area.getMethods()) {
                Method function = FUNCTIONS.get(m.getName());
                if (function != null && m.getReturnType() == function.getReturnType()
                        && Arrays.equals(m.getParameterTypes(), function.getParameterTypes())) {
                    m.setAccessible(true); // the areas are package-private classes
                    found.put(function, m);
                }
            }
            return Map.copyOf(found);
        }
    };

    /** What the simulated driver does around every call, under the lock. */
    interface Hook {
        /** Makes no call and refuses none. */
        Hook NONE = new Hook() {
            @Override
            public int begins(Thread carrier, String function, Object[] args) {
                return FakeDriverApi.SUCCESS;
            }

            @Override
            public void ends(String function, Object[] args, Object result) {
            }
        };

        /**
         * Before anything else of a call of {@code function}: throws when the driver lacks the
         * function, as the first call of a missing downcall does. Nothing began, nothing ends.
         */
        default void binds(String function) {
        }

        /**
         * A call of {@code function} begins on {@code carrier}: 0 to make it, else the result it
         * returns instead. Every begin is followed by {@link #ends}.
         */
        int begins(Thread carrier, String function, Object[] args);

        /** The call returned {@code result} (the refusal, when {@link #begins} refused it; null when it threw). */
        void ends(String function, Object[] args, Object result);
    }

    private final Object lock;
    private final List<Object> areas;
    private final Hook hook;
    /** Built once: a call looks its target up here, never by name. */
    private final Map<Method, Target> targets = new HashMap<>();

    private SimulatedDriverApi(Object lock, List<Object> areas, Hook hook) {
        this.lock = lock;
        this.areas = areas;
        this.hook = hook;
        for (Object area : areas) {
            for (Map.Entry<Method, Method> e : simulations(area.getClass()).entrySet()) {
                Target other = targets.put(e.getKey(), new Target(area, e.getValue()));
                if (other != null) {
                    throw new IllegalStateException(e.getKey().getName() + " is simulated by both "
                            + other.area().getClass().getSimpleName() + " and " + area.getClass().getSimpleName()
                            + "; keep one");
                }
            }
        }
    }

    /** The driver, each function served by the area that simulates it, under {@code lock}, inside {@code hook}. */
    static DriverApi over(Object lock, List<Object> areas, Hook hook) {
        return (DriverApi) Proxy.newProxyInstance(DriverApi.class.getClassLoader(), new Class<?>[] {DriverApi.class},
                new SimulatedDriverApi(lock, List.copyOf(areas), hook));
    }

    /**
     * The driver functions {@code area} simulates, each with the public method that does: the
     * same name, parameter types and result.
     */
    static Map<Method, Method> simulations(Class<?> area) {
        return SIMULATIONS.get(area);
    }

    @Override
    public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
        Target target = targets.get(method);
        if (target == null) {
            return unsimulated(proxy, method, args);
        }
        Thread carrier = Carriers.current();
        synchronized (lock) {
            hook.binds(method.getName());
            Object result = null;
            try {
                int refused = hook.begins(carrier, method.getName(), args);
                result = refused != FakeDriverApi.SUCCESS ? Integer.valueOf(refused)
                        : target.method().invoke(target.area(), args);
                return result;
            } catch (InvocationTargetException e) {
                throw e.getCause();
            } finally {
                hook.ends(method.getName(), args, result);
            }
        }
    }

    private Object unsimulated(Object proxy, Method method, Object[] args) {
        if (method.getDeclaringClass() == Object.class) {
            return switch (method.getName()) {
                case "equals" -> proxy == args[0];
                case "hashCode" -> System.identityHashCode(proxy);
                default -> "the simulated driver";
            };
        }
        throw new UnsupportedOperationException("the simulated driver does not simulate " + method.getName()
                + "; add a public method with its signature to the area class of its section in driver.functions ("
                + areas.stream().map(a -> a.getClass().getSimpleName()).collect(Collectors.joining(", "))
                + ") and take it out of SimulatedDriverCoverageTest.NOT_SIMULATED");
    }
}
