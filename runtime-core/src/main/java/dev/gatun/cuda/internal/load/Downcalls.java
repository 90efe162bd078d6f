package dev.gatun.cuda.internal.load;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * Downcall handles into one opened library, with the C signatures jextract generated.
 *
 * <p>Each function is resolved in the {@link SymbolLookup} this instance is given, not through
 * the generated bindings' handles: those resolve in the process's library
 * ({@link SystemLibraries}), while a {@code Downcalls} serves whichever library it is made for
 * (tests open others). The descriptor of each function is read off the generated static method
 * of the same name: its parameter and return types are the carriers jextract chose for the C
 * types, and on LP64 Linux each carrier has one layout, with
 * one exception: jextract gives a struct passed by value the same {@code MemorySegment} carrier
 * as a pointer, and passing it as a pointer would hand the driver an address where it reads the
 * struct's bytes. The caller names those parameters with their layouts (for the driver,
 * {@code internal.driver.ByValueStructs}, which {@code ByValueStructsTest} checks against the
 * generated prototypes of every function in driver.functions, so a new function with a by-value
 * struct fails the build until it is listed).
 */
public final class Downcalls {


    private final SymbolLookup symbols;
    private final String library;
    private final Map<String, List<Method>> generated;
    private final Map<String, Map<Integer, MemoryLayout>> byValue;

    /**
     * @param header the generated header class ({@code CudaDriver}, {@code Nvrtc})
     * @param symbols the opened library
     * @param library where it was loaded from, for messages
     */
    public Downcalls(Class<?> header, SymbolLookup symbols, String library) {
        this(header, symbols, library, Map.of());
    }

    /**
     * As {@link #Downcalls(Class, SymbolLookup, String)}, for a library some of whose functions
     * take structs by value.
     *
     * @param byValue the parameters passed as a struct by value: function name to parameter index
     *     to the struct's layout
     */
    public Downcalls(Class<?> header, SymbolLookup symbols, String library,
            Map<String, Map<Integer, MemoryLayout>> byValue) {
        this.symbols = symbols;
        this.library = library;
        this.byValue = Map.copyOf(byValue);
        this.generated = Arrays.stream(header.getMethods()).filter(m -> Modifier.isStatic(m.getModifiers()))
                .collect(Collectors.groupingBy(Method::getName));
    }

    /** Whether the library exports {@code name}. */
    public boolean exports(String name) {
        return symbols.find(name).isPresent();
    }

    /**
     * A downcall handle for {@code function}, of the generated method's type, to be kept in a
     * final field and called with {@code invokeExact}. When the library does not export it (a
     * function newer than the installed library), a handle of the same type that throws
     * {@link IllegalStateException}: callers check such functions with {@link #exports} first.
     *
     * @throws IllegalArgumentException when the bindings have no such function
     */
    public MethodHandle handle(String function) {
        FunctionDescriptor descriptor = descriptor(function);
        return symbols.find(function)
                // Safety: the descriptor is the prototype jextract read from the header that
                // declares this very symbol (see the class comment).
                .map(address -> Linker.nativeLinker().downcallHandle(address, descriptor))
                .orElseGet(() -> missing(function, descriptor.toMethodType()));
    }

    private FunctionDescriptor descriptor(String function) {
        List<Method> candidates = generated.getOrDefault(function, List.of());
        if (candidates.size() != 1) {
            throw new IllegalArgumentException("the generated bindings have " + candidates.size()
                    + " static methods named " + function + "; expected exactly one");
        }
        Method m = candidates.getFirst();
        Map<Integer, MemoryLayout> structs = byValue.getOrDefault(function, Map.of());
        Class<?>[] carriers = m.getParameterTypes();
        MemoryLayout[] arguments = new MemoryLayout[carriers.length];
        for (int i = 0; i < carriers.length; i++) {
            arguments[i] = structs.containsKey(i) ? structs.get(i) : layout(function, carriers[i]);
        }
        return m.getReturnType() == void.class ? FunctionDescriptor.ofVoid(arguments)
                : FunctionDescriptor.of(layout(function, m.getReturnType()), arguments);
    }

    private static MemoryLayout layout(String function, Class<?> carrier) {
        if (carrier == int.class) {
            return ValueLayout.JAVA_INT;
        } else if (carrier == long.class) {
            return ValueLayout.JAVA_LONG;
        } else if (carrier == byte.class) {
            return ValueLayout.JAVA_BYTE;
        } else if (carrier == short.class) {
            return ValueLayout.JAVA_SHORT;
        } else if (carrier == float.class) {
            return ValueLayout.JAVA_FLOAT;
        } else if (carrier == double.class) {
            return ValueLayout.JAVA_DOUBLE;
        } else if (carrier == MemorySegment.class) {
            return ValueLayout.ADDRESS;
        }
        throw new IllegalArgumentException(function + " has a " + carrier.getName()
                + " in its generated signature, which Gatun does not pass");
    }

    /** A handle of {@code type} that throws, naming the function and the library. */
    private MethodHandle missing(String function, MethodType type) {
        String message = function + " is not exported by " + library + "; a function newer than Gatun's "
                + "baseline is called only after checking that the library exports it";
        try {
            MethodHandle create = MethodHandles.insertArguments(MethodHandles.publicLookup().findConstructor(
                    IllegalStateException.class, MethodType.methodType(void.class, String.class)), 0, message);
            MethodHandle thrower = MethodHandles.foldArguments(
                    MethodHandles.throwException(type.returnType(), IllegalStateException.class), create);
            return MethodHandles.dropArguments(thrower, 0, type.parameterList());
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("IllegalStateException(String) is not accessible", e);
        }
    }

    /**
     * What a failed {@code invokeExact} of a downcall threw, to rethrow: downcalls throw no
     * checked exception, so anything else is unchecked already.
     */
    public static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException e) {
            return e;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException("a downcall threw a checked exception", t);
    }
}
