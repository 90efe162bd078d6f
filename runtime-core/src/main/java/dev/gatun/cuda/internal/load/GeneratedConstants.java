package dev.gatun.cuda.internal.load;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Predicate;

/**
 * Reads enumerators from a jextract header class: each is a public static no-argument method
 * returning {@code int}. Result codes are named this way, without loading the native library,
 * so that messages carry names even when a call fails before the library is usable.
 */
public final class GeneratedConstants {

    private GeneratedConstants() {
    }

    /**
     * Value to name for every int enumerator of {@code header} whose name passes {@code wanted};
     * where two names share a value, the first one found is kept.
     */
    public static Map<Integer, String> names(Class<?> header, Predicate<String> wanted) {
        Map<Integer, String> names = new HashMap<>();
        MethodHandles.Lookup lookup = MethodHandles.publicLookup();
        for (Method m : header.getMethods()) {
            String n = m.getName();
            if (!Modifier.isStatic(m.getModifiers()) || m.getParameterCount() != 0 || m.getReturnType() != int.class
                    || !wanted.test(n)) {
                continue;
            }
            try {
                // The constant accessors are public members reached through the public
                // header class, whichever split class declares them.
                MethodHandle h = lookup.findStatic(header, n, MethodType.methodType(int.class));
                names.putIfAbsent((int) h.invokeExact(), n);
            } catch (Throwable e) {
                throw new IllegalStateException("generated constant " + n + " is not readable", e);
            }
        }
        return Map.copyOf(names);
    }
}
