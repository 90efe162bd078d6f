package dev.gatun.cuda.bindings;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.GroupLayout;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.invoke.MutableCallSite;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * A native library the generated bindings call into, and the one place where their symbols are
 * resolved: every generated function's handle is {@link #downcall}, every {@code $address()} is
 * {@link #address}, and each header class's {@code SYMBOL_LOOKUP} is {@link #lookup()} (jextract
 * generates them with {@code SymbolLookup.loaderLookup()}; {@code cuda-bindings/jextract/RouteSymbols.java}
 * rewrites them when the bindings are regenerated).
 *
 * <p>Nothing here touches a native library until a function is called or an address asked for:
 * the generated classes, their constants, layouts and descriptors load on any machine. A call
 * that cannot be made throws from the call, every time, never from a class initializer.
 *
 * <p>The library comes from the {@link NativeLibraryProvider} found through the bindings' class
 * loader; Gatun's runtime provides the driver and NVRTC it found and opened, or its
 * {@code CudaUnavailableException}. Without a provider (the bindings used alone) the library is
 * opened by soname through the dynamic loader, and a failure is an {@link IllegalStateException}
 * that says so.
 */
public enum NativeLibrary {

    /** The CUDA driver ({@code libcuda.so.1}): {@code dev.gatun.cuda.bindings.driver}. */
    DRIVER("the CUDA driver", List.of("libcuda.so.1")),

    /** NVRTC, CUDA's runtime compiler: {@code dev.gatun.cuda.bindings.nvrtc}. */
    NVRTC("NVRTC", List.of("libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"));

    /**
     * An opened library.
     *
     * @param symbols its symbols, where every downcall into it is resolved
     * @param origin where it was loaded from and how it was found, for messages
     */
    public record Opened(SymbolLookup symbols, String origin) {
        /**
         * An opened library; neither part may be null.
         *
         * @param symbols its symbols, where every downcall into it is resolved
         * @param origin where it was loaded from and how it was found, for messages
         */
        public Opened {
            Objects.requireNonNull(symbols, "symbols");
            Objects.requireNonNull(origin, "origin");
        }
    }

    private static final MethodHandle BIND;

    static {
        try {
            BIND = MethodHandles.lookup().findStatic(NativeLibrary.class, "bind", MethodType.methodType(Object.class,
                    Supplier.class, String.class, FunctionDescriptor.class, MutableCallSite.class, Object[].class));
        } catch (ReflectiveOperationException e) {
            throw new AssertionError("NativeLibrary.bind is declared below", e);
        }
    }

    /** The provider, looked up on first use; empty when there is none. */
    private static volatile Optional<NativeLibraryProvider> provider;

    /** Libraries opened without a provider, kept so that each is opened once. */
    private static final Map<NativeLibrary, Opened> WITHOUT_RUNTIME = new ConcurrentHashMap<>();

    private final String displayName;
    private final List<String> sonames;

    NativeLibrary(String displayName, List<String> sonames) {
        this.displayName = displayName;
        this.sonames = sonames;
    }

    /**
     * The library, opened: by the {@link NativeLibraryProvider} of the bindings' class loader
     * (Gatun's runtime), or, when there is none, by the first of its sonames the dynamic loader
     * opens ({@code libcuda.so.1}; {@code libnvrtc.so.13}, {@code .12}, then unversioned).
     *
     * @return the opened library
     * @throws RuntimeException when it cannot be opened: the provider's exception
     *     ({@code dev.gatun.cuda.CudaUnavailableException} from Gatun's runtime), or, without a
     *     provider, an {@link IllegalStateException} naming each soname tried
     */
    public Opened open() {
        Optional<NativeLibraryProvider> p = provider();
        return p.isPresent() ? p.get().open(this) : WITHOUT_RUNTIME.computeIfAbsent(this, NativeLibrary::openBySoname);
    }

    /**
     * {@return a lookup in this library that opens it on its first {@code find}} Its
     * {@code find} throws as {@link #open()} does when the library cannot be opened.
     */
    public SymbolLookup lookup() {
        return name -> open().symbols().find(name);
    }

    /**
     * The address of a function of this library.
     *
     * @param function the symbol
     * @return its address
     * @throws RuntimeException as {@link #open()} does when the library cannot be opened
     * @throws UnsupportedOperationException when the library does not export {@code function}
     *     (one newer than the installed library)
     */
    public MemorySegment address(String function) {
        return address(open(), function);
    }

    /**
     * A downcall handle for a function of this library, of the type the {@link Linker} gives
     * {@code descriptor}, to keep in a static final field. Making it touches no native library:
     * its first call opens the library, resolves {@code function} and binds the handle to the
     * downcall, which later calls make directly. A call that cannot be made (no library, a
     * missing function) throws as {@link #address} does, from that call and every later one.
     *
     * <p>The caller vouches for the descriptor: it must be the function's C prototype (the
     * generated bindings pass the one jextract read from the header), or the call may crash the
     * process.
     *
     * @param function the symbol
     * @param descriptor its C prototype
     * @return the handle
     */
    public MethodHandle downcall(String function, FunctionDescriptor descriptor) {
        return downcall(this::open, function, descriptor);
    }

    /**
     * {@link #downcall(String, FunctionDescriptor)} in the library {@code library} supplies: how
     * the bindings of another Gatun module (gatun-blas: cuBLAS, cuBLASLt, cuDNN) bind their
     * functions lazily to libraries their module finds and opens, and a seam for tests.
     * {@code library} is called on the first call (and on each later one while it throws), never
     * when the handle is made; it must return the same library every time it succeeds.
     *
     * @param library opens the library, or throws the reason it cannot be opened
     * @param function the symbol
     * @param descriptor its C prototype (the caller vouches for it, as for {@link #downcall(String, FunctionDescriptor)})
     * @return the handle
     */
    public static MethodHandle downcall(Supplier<Opened> library, String function, FunctionDescriptor descriptor) {
        MethodType type = descriptor.toMethodType();
        if (descriptor.returnLayout().filter(GroupLayout.class::isInstance).isPresent()) {
            // The Linker's handle for a struct returned by value takes the allocator of the result first.
            type = type.insertParameterTypes(0, SegmentAllocator.class);
        }
        MutableCallSite site = new MutableCallSite(type);
        site.setTarget(MethodHandles.insertArguments(BIND, 0, library, function, descriptor, site)
                .asCollector(Object[].class, type.parameterCount())
                .asType(type));
        // A static final dynamic invoker is a constant to the JIT, and so is the target it reaches:
        // once bound, a call inlines the downcall as a handle made directly would.
        return site.dynamicInvoker();
    }

    /**
     * The first call of a {@link #downcall} handle (or a later one, while the library cannot be
     * opened or lacks the function): resolves, binds the call site, makes the call. Threads that
     * still see the old target bind again, to the same address: no lock is needed.
     */
    private static Object bind(Supplier<Opened> library, String function, FunctionDescriptor descriptor,
            MutableCallSite site, Object[] arguments) throws Throwable {
        // Safety: the caller of downcall vouches that the descriptor is the function's prototype.
        MethodHandle target = Linker.nativeLinker().downcallHandle(address(library.get(), function), descriptor);
        site.setTarget(target);
        return target.invokeWithArguments(arguments);
    }

    private static MemorySegment address(Opened library, String function) {
        return library.symbols().find(function).orElseThrow(() -> new UnsupportedOperationException(function
                + " is not exported by " + library.origin() + ": the installed library predates it. Update it, or "
                + "check that lookup().find(\"" + function + "\") is present before calling it."));
    }

    private static Optional<NativeLibraryProvider> provider() {
        Optional<NativeLibraryProvider> p = provider;
        if (p == null) {
            // Through the bindings' own class loader: each copy of Gatun finds its own runtime.
            // Threads racing here find the same provider; any of the instances serves.
            p = ServiceLoader.load(NativeLibraryProvider.class, NativeLibrary.class.getClassLoader()).findFirst();
            provider = p;
        }
        return p;
    }

    private Opened openBySoname() {
        List<String> failures = new ArrayList<>();
        for (String soname : sonames) {
            try {
                // Safety: the dynamic loader maps the library as System.load would. The global arena
                // keeps it mapped for the process: the downcall handles bound into it never die.
                return new Opened(SymbolLookup.libraryLookup(soname, Arena.global()),
                        soname + " (dynamic loader, without Gatun's runtime)");
            } catch (IllegalArgumentException e) {
                failures.add(soname + ": " + e.getMessage());
            }
        }
        throw new IllegalStateException(Character.toUpperCase(displayName.charAt(0)) + displayName.substring(1)
                + " could not be opened: "
                + String.join("; ", failures) + ". gatun-bindings is used without Gatun's runtime (dev.gatun:gatun-core), "
                + "so only the dynamic loader's search was tried; with the runtime on the class or module path, its "
                + "loader also searches where drivers and toolkits are installed and can be pointed at a library.");
    }
}
