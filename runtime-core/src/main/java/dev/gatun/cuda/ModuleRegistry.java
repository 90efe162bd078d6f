package dev.gatun.cuda;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.context.ContextCore;
import dev.gatun.cuda.internal.context.ModuleResource;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A context's loaded modules by name ({@link CudaContext#modules()}).
 *
 * <p>Loading under a name that is taken replaces the entry: kernels obtained before keep
 * running the old image until they are closed and their launches have completed, then the old
 * module is unloaded through the retirement queue. A load that fails (bad image, missing
 * kernel name) leaves the previous entry untouched. Module load and unload may synchronize the
 * device, so they run inside the capture gate.
 */
public final class ModuleRegistry {

    private static final Logger LOG = LoggerFactory.getLogger(ModuleRegistry.class);
    private static final int UNSUPPORTED_PTX_VERSION = CudaDriver.CUDA_ERROR_UNSUPPORTED_PTX_VERSION();

    private final CudaContext context;
    private final ContextCore core;
    private final Map<String, Entry> entries = new HashMap<>();
    private volatile NvrtcCompiler compiler;
    /** Set once the driver rejected NVRTC's PTX ISA: later sources are compiled to CUBIN directly. */
    private volatile boolean preferCubin;

    /** @param lowered name expression to lowered (mangled) name, for sources compiled with NVRTC */
    private record Entry(ModuleResource module, ModuleImage.Kind kind, long generation, Map<String, String> lowered) {
    }

    ModuleRegistry(CudaContext context) {
        this.context = context;
        this.core = context.core();
    }

    /**
     * Loads {@code image} under {@code name}, replacing what the name referred to.
     *
     * @param requiredKernels functions that must exist in the image; if one is missing the load
     *     fails with {@link IllegalArgumentException} and the previous entry stays
     * @throws CudaException when the driver rejects the image (e.g.
     *     {@code CUDA_ERROR_UNSUPPORTED_PTX_VERSION}, {@code CUDA_ERROR_INVALID_IMAGE})
     */
    public ModuleInfo load(String name, ModuleImage image, String... requiredKernels) {
        return install(name, image, Map.of(), requiredKernels);
    }

    /**
     * Compiles CUDA C++ with NVRTC (through the kernel cache) and loads the result under
     * {@code name}. Kernels can then be looked up by their name expressions (C++ templates)
     * as well as by plain names. If the driver rejects NVRTC's PTX as a newer ISA than it knows
     * ({@code CUDA_ERROR_UNSUPPORTED_PTX_VERSION}), the source is compiled to CUBIN for the same
     * architecture instead, and so is every later source in this context.
     *
     * @throws CompilationException with the full compiler log when the source does not compile
     */
    public ModuleInfo loadSource(String name, String source, CompileOptions options, String... requiredKernels) {
        context.checkOpen();
        CompileOptions effective = preferCubin ? asCubin(options) : options;
        CompiledProgram program = compiler().compile(source, effective);
        try {
            return install(name, image(program), program.loweredNames(), requiredKernels);
        } catch (CudaException e) {
            if (e.result() != UNSUPPORTED_PTX_VERSION || program.kind() != CompileTarget.Kind.PTX) {
                throw e;
            }
            preferCubin = true;
            LOG.info("The driver (CUDA {}) rejects NVRTC {}'s PTX ISA; compiling to CUBIN from now on",
                    core.driver().version(), program.nvrtcVersion());
            CompiledProgram cubin = compiler().compile(source, asCubin(options));
            return install(name, image(cubin), cubin.loweredNames(), requiredKernels);
        }
    }

    /** Whether this context compiles sources to CUBIN because the driver rejected NVRTC's PTX. */
    public boolean compilesToCubin() {
        return preferCubin;
    }

    /** Uses {@code compiler} for {@link #loadSource} (default: the process's NVRTC with the default kernel cache). */
    public void useCompiler(NvrtcCompiler compiler) {
        this.compiler = compiler;
    }

    private NvrtcCompiler compiler() {
        NvrtcCompiler c = compiler;
        if (c == null) {
            synchronized (this) {
                c = compiler;
                if (c == null) {
                    c = NvrtcLibrary.system().compiler();
                    compiler = c;
                }
            }
        }
        return c;
    }

    private static CompileOptions asCubin(CompileOptions o) {
        CompileTarget t = o.target();
        if (t.kind() == CompileTarget.Kind.CUBIN) {
            return o;
        }
        return new CompileOptions(CompileTarget.cubin(t.major(), t.minor()), o.programName(), o.options(),
                o.includeDirectories(), o.nameExpressions());
    }

    private static ModuleImage image(CompiledProgram program) {
        return ModuleImage.of("nvrtc:" + program.programName() + " (" + program.architecture() + ")", program.image());
    }

    private ModuleInfo install(String name, ModuleImage image, Map<String, String> lowered, String... requiredKernels) {
        context.checkOpen();
        core.enter("cuModuleLoadData");
        core.reap();
        ModuleResource module = loadModule(name, image);
        try {
            for (String kernel : requiredKernels) {
                if (function(module, lowered.getOrDefault(kernel, kernel)) == null) {
                    throw new IllegalArgumentException("module image " + image.artifact() + " has no kernel '" + kernel
                            + "'; the registry entry '" + name + "' was left unchanged");
                }
            }
        } catch (RuntimeException e) {
            module.release();
            throw e;
        }
        Entry previous;
        Entry installed;
        synchronized (entries) {
            previous = entries.get(name);
            installed = new Entry(module, image.kind(), previous == null ? 1 : previous.generation + 1, Map.copyOf(lowered));
            entries.put(name, installed);
        }
        if (previous != null) {
            previous.module.release();
        }
        return info(name, installed);
    }

    private ModuleResource loadModule(String name, ModuleImage image) {
        byte[] bytes = image.loadableBytes();
        MemorySegment handle;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = arena.allocateFrom(ValueLayout.JAVA_BYTE, bytes);
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            // Safety: data holds the whole image (PTX NUL-terminated) for the call, which
            // copies it; ModuleImage checked when it was made that every offset and size the
            // driver follows lies within those bytes. out receives the CUmodule. Module load
            // may synchronize: gated.
            core.synchronizing("cuModuleLoadData(" + image.artifact() + ")", () -> core.api().cuModuleLoadData(out, data));
            handle = MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
        }
        return new ModuleResource(core, handle, name, image.artifact(), image.sha256());
    }

    /** The CUfunction for {@code kernel}, or null when the module has no such function. */
    static MemorySegment function(ModuleResource module, String kernel) {
        ContextCore core = module.context();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            // Safety: the module is loaded (the caller holds a reference); the name is a
            // NUL-terminated copy alive for the call.
            int r = core.api().cuModuleGetFunction(out, module.handle(), arena.allocateFrom(kernel));
            if (r == CudaDriver.CUDA_ERROR_NOT_FOUND()) {
                return null;
            }
            core.check(r, "cuModuleGetFunction(" + kernel + ")");
            return MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
        }
    }

    /**
     * A kernel of the module now registered under {@code name}, by function name or, for a
     * source compiled with name expressions, by name expression (e.g. {@code "scale<float>"}).
     * The kernel keeps that exact module alive, even if the name is later replaced; close it
     * when done.
     *
     * @throws IllegalArgumentException when the name is not registered or has no such kernel
     */
    public Kernel kernel(String name, String function) {
        context.checkOpen();
        core.enter("cuModuleGetFunction");
        ModuleResource module;
        String symbol;
        synchronized (entries) {
            Entry e = entries.get(name);
            if (e == null) {
                throw new IllegalArgumentException("no module registered as '" + name + "'; registered: " + names());
            }
            module = e.module;
            symbol = e.lowered.getOrDefault(function, function);
            module.retain();
        }
        try {
            MemorySegment f = function(module, symbol);
            if (f == null) {
                throw new IllegalArgumentException("module '" + name + "' (" + module.artifact() + ") has no kernel '"
                        + function + "'");
            }
            return new Kernel(context, module, f, function);
        } catch (RuntimeException e) {
            module.release();
            throw e;
        }
    }

    /** What {@code name} refers to now. */
    public Optional<ModuleInfo> info(String name) {
        synchronized (entries) {
            Entry e = entries.get(name);
            return e == null ? Optional.empty() : Optional.of(info(name, e));
        }
    }

    private static ModuleInfo info(String name, Entry e) {
        return new ModuleInfo(name, e.kind, e.module.artifact(), e.module.sha256(), e.generation);
    }

    /** The registered names, sorted. */
    public Set<String> names() {
        synchronized (entries) {
            return new TreeSet<>(entries.keySet());
        }
    }

    /** Removes {@code name}; its module is unloaded once no kernel or graph uses it. Returns whether it existed. */
    public boolean unload(String name) {
        Entry e;
        synchronized (entries) {
            e = entries.remove(name);
        }
        if (e != null) {
            e.module.release();
        }
        return e != null;
    }

    /** Drops every entry (context shutdown). */
    void clear() {
        for (String name : names()) {
            unload(name);
        }
    }
}
