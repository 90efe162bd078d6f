package dev.gatun.cuda.testing;

import dev.gatun.cuda.internal.driver.DriverApi;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;

/**
 * The fault-injection seam, one decorator for every driver function: wraps any
 * {@link DriverApi} (the simulated driver here, the real one on a GPU host) and makes chosen
 * calls return chosen results, as planned in a {@link FaultPlan}. A call the plan replaces is
 * not made; a call it overrides is made and its result replaced, which is how a test produces
 * an "uncertain" submission: the work was queued, the caller was told it failed. It covers a
 * function added to driver.functions without any change here.
 */
public final class FaultInjection {

    private FaultInjection() {
    }

    /** {@code next} behind {@code plan}. */
    public static DriverApi around(DriverApi next, FaultPlan plan) {
        InvocationHandler handler = (proxy, method, args) -> {
            String function = method.getName();
            if (method.getReturnType() != int.class || !function.startsWith("cu")) {
                return invoke(method, next, args); // Object's methods
            }
            int injected = plan.before(function);
            if (injected != FaultPlan.PASS) {
                return injected;
            }
            return plan.after(function, (Integer) invoke(method, next, args));
        };
        return (DriverApi) Proxy.newProxyInstance(DriverApi.class.getClassLoader(), new Class<?>[] {DriverApi.class},
                handler);
    }

    private static Object invoke(Method method, Object target, Object[] args) throws Throwable {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
