package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Layer 2, kernel libraries: code loaded once for every context of the process
 * ({@code CUlibrary}), its kernels ({@code CUkernel}), and a kernel's function in this context.
 * Each call names its operation once, owns its out-parameters and checks its result.
 */
public final class LibraryCalls {

    private static final String LOAD = "cuLibraryLoadData";
    private static final String GET_MODULE = "cuLibraryGetModule";
    private static final String UNLOAD = "cuLibraryUnload";
    private static final String GET_KERNEL = "cuLibraryGetKernel";
    private static final String GET_FUNCTION = "cuKernelGetFunction";
    private static final int NOT_FOUND = CudaDriver.CUDA_ERROR_NOT_FOUND();

    private final Checked c;

    LibraryCalls(Checked c) {
        this.c = c;
    }

    /**
     * Loads a library image; may synchronize: call it inside the gate.
     *
     * @param image the whole image as the driver takes it (PTX NUL-terminated), structurally
     *     checked already ({@code ModuleImage}): never bytes the driver could read past
     * @param artifact where the image came from, for the error message
     */
    public MemorySegment load(byte[] image, String artifact) {
        c.require(DriverFeature.KERNEL_LIBRARIES);
        c.live(LOAD);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocateFrom(ValueLayout.JAVA_BYTE, image);
            MemorySegment out = c.out();
            // Safety: data holds the whole image, checked as cuModuleLoadData's is (ModuleCalls.load),
            // for the call, which copies it; no JIT or library options (NULL arrays, counts 0); out
            // receives the CUlibrary.
            int r = c.api.cuLibraryLoadData(out, data, MemorySegment.NULL, MemorySegment.NULL, 0, MemorySegment.NULL,
                    MemorySegment.NULL, 0);
            if (r != 0) {
                throw c.fail(r, LOAD + "(" + artifact + ")");
            }
            return MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
        }
    }

    /**
     * Loads {@code library} into this context now, as {@code cuModuleLoadData} loads a module
     * ({@code cuLibraryGetModule}, with this context current). A driver that loads libraries
     * lazily (the default since CUDA 12.2: {@code CUDA_MODULE_LOADING}, and for libraries
     * {@code CUDA_MODULE_DATA_LOADING}, process-wide settings read at {@code cuInit}) compiles and
     * checks a library's code only when a context first needs it, and {@code cuLibraryLoadData}
     * has no option to ask for an eager load (its library options are the host table and
     * {@code CU_LIBRARY_BINARY_IS_PRESERVED}): without this, a bad image would load and fail at
     * its first kernel.
     *
     * @param library a library just loaded, which nothing else uses yet
     * @param artifact where its image came from, for the error message
     */
    public void loadIntoContext(MemorySegment library, String artifact) {
        c.current(GET_MODULE);
        MemorySegment out = c.out();
        // Safety: the caller holds the library loaded; this context is current, the one the driver
        // loads it into; out receives the CUmodule, which the library owns and unloads with itself.
        int r = c.api.cuLibraryGetModule(out, library);
        if (r != 0) {
            throw c.fail(r, GET_MODULE + "(" + artifact + ", loading it into this context)");
        }
    }

    /**
     * Unloads a library; the raw result, for retirement (sticky results still poison).
     *
     * @param library a library whose kernels no queued or future launch, in any context, uses
     */
    public int unload(MemorySegment library) {
        // Safety: the caller's contract: no launch of its kernels is pending or can happen.
        return c.observe(c.api.cuLibraryUnload(library), UNLOAD);
    }

    /** The kernel {@code name} of a loaded library, or null when it has none. */
    public MemorySegment kernel(MemorySegment library, String name) {
        c.live(GET_KERNEL);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = c.out();
            // Safety: the caller holds the library loaded; the name is a NUL-terminated copy alive
            // for the call; out receives the CUkernel.
            DriverLog.asking(); // the caller says which kernel is missing
            int r = -1;
            try {
                r = c.api.cuLibraryGetKernel(out, library, arena.allocateFrom(name));
            } finally {
                DriverLog.answered(r, r == NOT_FOUND);
            }
            if (r == NOT_FOUND) {
                return null;
            }
            if (r != 0) {
                throw c.fail(r, GET_KERNEL + "(" + name + ")");
            }
            return MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
        }
    }

    /**
     * The function ({@code CUfunction}) of {@code kernel} in this context, which the driver loads
     * into the context on first use: an ordinary function, launched, captured and queried as any.
     *
     * @param name the kernel's name, for the error message
     */
    public MemorySegment function(MemorySegment kernel, String name) {
        c.current(GET_FUNCTION);
        MemorySegment out = c.out();
        // Safety: the caller holds the kernel's library loaded; this context is current, which
        // is the one the driver gives the function for; out receives the CUfunction.
        int r = c.api.cuKernelGetFunction(out, kernel);
        if (r != 0) {
            throw c.fail(r, GET_FUNCTION + "(" + name + ")");
        }
        return MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
    }
}
