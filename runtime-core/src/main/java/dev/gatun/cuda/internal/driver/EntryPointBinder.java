package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.internal.load.Downcalls;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.invoke.MutableCallSite;
import java.util.List;

/**
 * Binds the functions of one {@link NativeDriverApi}, each on its first call: until then its call
 * site's target is {@link #bind}, which finds the entry point ({@link EntryPoints}, or by name for
 * the {@linkplain DriverFunction#byName() three} that run before the driver's version is known),
 * makes the downcall handle, makes it the call site's target and makes the call. From then on the
 * call site reaches the downcall directly: a static final call site's target is a constant to the
 * JIT, so a warmed call costs what it cost when every handle was made at load time. A function
 * the driver lacks throws {@link dev.gatun.cuda.DriverTooOldException} from its call, on every
 * call, and its call site stays unbound. Threads that race to a function's first call each bind
 * it, to the same address: no lock is needed.
 *
 * <p>The current context across a binding. Finding the entry point and making the handle can
 * take locks (the Linker's caches, the method-handle machinery's), and a virtual thread that
 * waits for one may resume on another carrier, whose current context is another's, after layer 2
 * made its context current right before the call ({@link Checked}). So the first call of a
 * function reads the thread's current context before it binds and, inside the handle that makes
 * the call, makes that context current again when it differs, with nothing that can wait between
 * that and the downcall: the context the call sees is the one made current for it, on its first
 * call as on every later one. {@code cuCtxGetCurrent} and the functions found by name need no
 * context and read none.
 */
final class EntryPointBinder {

    private static final MethodHandle BIND;
    private static final MethodHandle RESTORE;

    static {
        MethodHandles.Lookup lookup = MethodHandles.lookup();
        try {
            BIND = lookup.findVirtual(EntryPointBinder.class, "bind", MethodType.methodType(Object.class,
                    DriverFunction.class, MutableCallSite.class, Object[].class));
            RESTORE = lookup.findVirtual(EntryPointBinder.class, "restore", MethodType.methodType(void.class,
                    MemorySegment.class, long.class));
        } catch (ReflectiveOperationException e) {
            throw new AssertionError("EntryPointBinder.bind and restore are declared below", e);
        }
    }

    private final Downcalls downcalls;
    /** The driver the functions are bound for, whose own functions the binding calls. */
    private final DriverApi driver;
    /** The driver's version, read on the first binding through cuGetProcAddress_v2; 0 until then. */
    private int installed;

    /**
     * @param downcalls the opened driver library
     * @param driver the {@link NativeDriverApi} whose functions these are: {@code cuDriverGetVersion},
     *     {@code cuGetProcAddress_v2} and the current-context functions are called through it
     */
    EntryPointBinder(Downcalls downcalls, DriverApi driver) {
        this.downcalls = downcalls;
        this.driver = driver;
    }

    /**
     * A handle of {@code function}'s type that binds it on its first call: {@code site}'s dynamic
     * invoker, with its target set to do so.
     *
     * @param site a static call site of the function's type, or null for one of this instance's own
     */
    MethodHandle lazy(DriverFunction function, MutableCallSite site) {
        MethodType type = downcalls.type(function.binding());
        MutableCallSite s = site != null ? site : new MutableCallSite(type);
        if (!s.type().equals(type)) {
            throw new IllegalStateException(function + "'s call site has type " + s.type() + ", its binding "
                    + function.binding() + " " + type);
        }
        s.setTarget(MethodHandles.insertArguments(BIND, 0, this, function, s)
                .asCollector(Object[].class, type.parameterCount()).asType(type));
        return s.dynamicInvoker();
    }

    /** The first call of {@code function} (or a later one, while the driver lacks it): binds {@code site}, makes the call. */
    private Object bind(DriverFunction function, MutableCallSite site, Object[] arguments) throws Throwable {
        if (function.byName() || function == DriverFunction.cuCtxGetCurrent) {
            MethodHandle target = link(function);
            site.setTarget(target);
            return target.invokeWithArguments(arguments);
        }
        // Safety: the confined arena's block outlives the call below; it holds one CUcontext.
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment context = arena.allocate(ValueLayout.ADDRESS);
            // Before anything that takes a lock: the context layer 2 made current for this call.
            boolean read = driver.cuCtxGetCurrent(context) == 0;
            long current = context.get(ValueLayout.JAVA_LONG, 0);
            MethodHandle target = link(function);
            site.setTarget(target);
            MethodHandle call = read ? MethodHandles.foldArguments(target,
                    MethodHandles.insertArguments(RESTORE, 0, this, context, current)) : target;
            return call.invokeWithArguments(arguments);
        }
    }

    /**
     * Inside the first call's handle, right before the downcall: makes {@code context} current
     * again where the binding left the thread on a carrier with another. A failure to is left to
     * the call itself, which then reports the context it found.
     */
    private void restore(MemorySegment out, long context) {
        if (driver.cuCtxGetCurrent(out) != 0 || out.get(ValueLayout.JAVA_LONG, 0) != context) {
            // Safety: context was current on this thread a moment ago (or NULL, which unbinds).
            driver.cuCtxSetCurrent(MemorySegment.ofAddress(context));
        }
    }

    /** The downcall handle of {@code function}, at the entry point the driver has for it. */
    private MethodHandle link(DriverFunction function) {
        MemorySegment address;
        if (function.byName()) {
            address = downcalls.find(function.symbol()).orElseThrow(() -> notADriver(function.symbol()
                    + " is not exported by it"));
        } else {
            address = EntryPoints.resolve(driver::cuGetProcAddress_v2, installed(), function);
        }
        // Safety: the driver returned this address for the function's base name at the version of
        // the prototype the binding declares (EntryPoints), or exports it under that very name.
        return downcalls.link(function.binding(), address);
    }

    /** The driver's version ({@code cuDriverGetVersion}), read once; racing threads read the same. */
    private int installed() {
        int v = installed;
        if (v == 0) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
                int r = driver.cuDriverGetVersion(out);
                if (r != 0) {
                    throw notADriver("cuDriverGetVersion failed with " + CuResults.name(r));
                }
                v = out.get(ValueLayout.JAVA_INT, 0);
            }
            installed = v;
        }
        return v;
    }

    private CudaUnavailableException notADriver(String why) {
        String message = "The CUDA driver at " + downcalls.library() + " cannot be used: " + why
                + ". Install an NVIDIA driver for CUDA 12.0 or newer.";
        return new CudaUnavailableException(message, List.of(message));
    }
}
