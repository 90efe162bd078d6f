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
 * test controls do, so the simulated GPU changes state one call at a time.
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

    /** What every call checks first, under the lock: its name and arguments. */
    @FunctionalInterface
    interface Check {
        void before(String function, Object[] args);
    }

    private final Object lock;
    private final List<Object> areas;
    private final Check check;
    /** Built once: a call looks its target up here, never by name. */
    private final Map<Method, Target> targets = new HashMap<>();

    private SimulatedDriverApi(Object lock, List<Object> areas, Check check) {
        this.lock = lock;
        this.areas = areas;
        this.check = check;
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

    /** The driver, each function served by the area that simulates it, under {@code lock}, after {@code check}. */
    static DriverApi over(Object lock, List<Object> areas, Check check) {
        return (DriverApi) Proxy.newProxyInstance(DriverApi.class.getClassLoader(), new Class<?>[] {DriverApi.class},
                new SimulatedDriverApi(lock, List.copyOf(areas), check));
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
        synchronized (lock) {
            check.before(method.getName(), args);
            try {
                return target.method().invoke(target.area(), args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
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
