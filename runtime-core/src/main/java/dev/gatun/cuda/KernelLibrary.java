package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.LibraryResource;
import dev.gatun.cuda.internal.context.ModuleResource;
import dev.gatun.cuda.internal.driver.LibraryCalls;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/**
 * Kernel code loaded once for every context ({@code cuLibraryLoadData}): where a module
 * ({@link ModuleRegistry}) belongs to the one context it was loaded in, a library's kernels run
 * on the device's primary context and on each of its green contexts ({@link Device#partitionSms})
 * alike. Load one with {@link CudaContext#loadLibrary}; take a kernel for a context with
 * {@link #kernel(String, CudaContext)} ({@code cuLibraryGetKernel}, then {@code cuKernelGetFunction}
 * in that context), which launches, captures and is closed like any {@link Kernel}. The load
 * also loads the library into the loading context, so a bad image fails there with an
 * {@link ImageRejectedException}, as a module's load does, even where the driver loads libraries
 * lazily.
 *
 * <p>Owner rules as for every owner: {@link #close()} is idempotent; the library is unloaded
 * ({@code cuLibraryUnload}, through the loading context's retirement queue) once it is closed and
 * every kernel taken from it, in any context, has been closed and its launches have completed.
 * Close the kernels taken for other contexts before the context that loaded the library: that
 * context's retirement queue unloads it.
 */
public final class KernelLibrary extends Owner {

    private static final String LOAD = "cuLibraryLoadData";

    private final CudaContext context;
    private final LibraryResource resource;

    private KernelLibrary(CudaContext context, LibraryResource resource) {
        super(resource);
        this.context = context;
        this.resource = resource;
    }

    /**
     * Loads {@code image} and loads it into {@code context} at once, so that an image the driver
     * rejects fails here, as a module's does, not at its first kernel (inside the capture gate: a
     * load may synchronize the device).
     *
     * @throws ImageRejectedException when the driver rejects the image, at either step
     */
    static KernelLibrary load(CudaContext context, ModuleImage image) {
        ContextState state = context.state();
        byte[] bytes = image.loadableBytes(); // PTX NUL-terminated
        LibraryCalls calls = state.calls().libraries();
        MemorySegment handle;
        try (var _ = state.enterSection(LOAD + "(" + image.artifact() + ")")) {
            try {
                handle = calls.load(bytes, image.artifact());
            } catch (CudaException e) {
                throw ImageRejectedException.restate(e, image);
            }
            try {
                calls.loadIntoContext(handle, image.artifact());
            } catch (RuntimeException | Error e) {
                // No owner and no kernel has the handle yet: unloaded here, inside the same section.
                int r = calls.unload(handle);
                if (r != 0) {
                    e.addSuppressed(state.calls().checked().fail(r, "cuLibraryUnload (of the library that failed to "
                            + "load into the context; the driver keeps it)"));
                }
                if (e instanceof CudaException failure) {
                    throw ImageRejectedException.restate(failure, image);
                }
                throw e;
            }
        }
        return new KernelLibrary(context, new LibraryResource(state, handle, image.artifact(), image.sha256()));
    }

    /** {@return the context that loaded this library, whose retirement queue unloads it} */
    public CudaContext context() {
        return context;
    }

    /** {@return where the image came from} */
    public String artifact() {
        return resource.artifact();
    }

    /** {@return hex SHA-256 of the loaded image} */
    public String sha256() {
        return resource.sha256();
    }

    /**
     * {@return the kernel {@code name} in the context that loaded this library}
     *
     * @param name the kernel's (mangled) name
     * @throws IllegalArgumentException when the library has no such kernel
     */
    public Kernel kernel(String name) {
        return kernel(name, context);
    }

    /**
     * The kernel {@code name} for launches on streams of {@code on}: the function the driver gives
     * for {@code on} ({@code cuKernelGetFunction} with {@code on} current), so it runs where
     * {@code on}'s streams run, on a green context's SMs for a green context. The kernel belongs to
     * {@code on} (its owners and launches are {@code on}'s) and holds this library loaded until
     * it is closed and its launches have completed.
     *
     * @param name the kernel's (mangled) name
     * @param on the context whose streams will launch it: the loading context, or another of the same
     *     {@link Cuda}, such as a green context of a {@link SmPartition}
     * @return the kernel, to close when done
     * @throws IllegalArgumentException when the library has no such kernel, or {@code on} belongs to
     *     another Cuda instance
     * @throws IllegalStateException when this library or {@code on} is closed
     */
    public Kernel kernel(String name, CudaContext on) {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(on, "on");
        resource.checkOpen();
        on.checkOpen();
        context.checkSameDriver(on, "the context to take the kernel for");
        resource.hold(); // the kernel's: dropped when its module view is retired, or below on failure
        boolean made = false;
        try {
            MemorySegment kernel = context.state().calls().libraries().kernel(resource.handle(), name);
            if (kernel == null) {
                throw new IllegalArgumentException(resource.identity() + " has no kernel '" + name
                        + "' (cuLibraryGetKernel: not found); C++ kernels need their mangled name, or extern \"C\"");
            }
            MemorySegment function = on.state().calls().libraries().function(kernel, name);
            on.state().reap();
            Kernel k = new Kernel(on, ModuleResource.ofLibrary(on.state(), resource), function, name);
            made = true;
            return k;
        } finally {
            if (!made) {
                resource.unhold();
            }
        }
    }
}
