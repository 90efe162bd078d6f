package dev.gatun.cuda.internal.load;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodType;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * Downcall handles into one opened library, with the C signatures jextract generated.
 *
 * <p>A {@code Downcalls} serves the library it is made for (tests open others), not the one the
 * generated bindings' own handles resolve in ({@link SystemLibraries}). Its caller decides where
 * each function is: {@link #find} looks a symbol up by name ({@code dlsym}); the driver's
 * functions come from {@code cuGetProcAddress_v2} instead ({@code internal.driver.EntryPointBinder}).
 * {@link #link} then makes the handle. The descriptor of each function is read off the generated
 * static method of the same name: its parameter and return types are the carriers jextract chose
 * for the C types, and on LP64 Linux each carrier has one layout, with one exception: jextract
 * gives a struct passed by value the same {@code MemorySegment} carrier as a pointer, and passing
 * it as a pointer would hand the driver an address where it reads the struct's bytes. The caller
 * names those parameters with their layouts (for the driver, {@code internal.driver.ByValueStructs},
 * which {@code ByValueStructsTest} checks against the generated prototypes of every function in
 * driver.functions, so a new function with a by-value struct fails the build until it is listed).
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

    /** {@return where the library was loaded from, for messages} */
    public String library() {
        return library;
    }

    /** {@return the address of {@code symbol} in the library, or empty when it does not export it} */
    public Optional<MemorySegment> find(String symbol) {
        return symbols.find(symbol);
    }

    /**
     * {@return the type of {@code function}'s downcall handles: the generated method's}
     *
     * @throws IllegalArgumentException when the bindings have no such function
     */
    public MethodType type(String function) {
        return descriptor(function).toMethodType();
    }

    /**
     * A downcall handle for {@code function} at {@code address}, of the generated method's type, to
     * be called with {@code invokeExact}.
     *
     * @param address where the library has the function, with the prototype of the generated
     *     method of that name (the caller vouches for that)
     * @throws IllegalArgumentException when the bindings have no such function
     */
    public MethodHandle link(String function, MemorySegment address) {
        // Safety: the descriptor is the prototype jextract read from the header that declares
        // this very symbol (see the class comment); the caller vouches for the address.
        return Linker.nativeLinker().downcallHandle(address, descriptor(function));
    }

    /**
     * {@return {@code function}'s C prototype: the generated method's carriers, with the struct
     * layouts of the parameters passed by value}
     *
     * @throws IllegalArgumentException when the bindings have no such function
     */
    public FunctionDescriptor descriptor(String function) {
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
