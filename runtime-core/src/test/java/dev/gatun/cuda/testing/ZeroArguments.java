package dev.gatun.cuda.testing;

import java.lang.foreign.MemorySegment;
import java.lang.reflect.Method;
import java.util.Arrays;

/** Arguments of the right types for a downcall-shaped method: zeros and NULL, never dereferenced. */
public final class ZeroArguments {

    private ZeroArguments() {
    }

    public static Object[] of(Method m) {
        return Arrays.stream(m.getParameterTypes()).map(ZeroArguments::zero).toArray();
    }

    private static Object zero(Class<?> type) {
        if (type == MemorySegment.class) {
            return MemorySegment.NULL;
        } else if (type == int.class) {
            return 0;
        } else if (type == long.class) {
            return 0L;
        } else if (type == byte.class) {
            return (byte) 0;
        }
        throw new IllegalArgumentException("no zero for " + type);
    }
}
