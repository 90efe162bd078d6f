package dev.gatun.cuda;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.ModuleResource;
import dev.gatun.cuda.internal.events.ModuleLoadEvent;
import java.lang.foreign.MemorySegment;
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
    private static final String LOAD = "cuModuleLoadData";

    private final CudaContext context;
    private final ContextState state;
    private final Map<String, Entry> entries = new HashMap<>();
    /** Set once the driver rejected a PTX image's ISA (see {@link #isPtxRejected()}). */
    private volatile boolean ptxRejected;

    /** @param lowered name expression to lowered (mangled) name, for sources compiled with NVRTC */
    private record Entry(ModuleResource module, ModuleImage.Kind kind, long generation, Map<String, String> lowered) {
    }

    ModuleRegistry(CudaContext context) {
        this.context = context;
        this.state = context.state();
    }

    /**
     * Loads {@code image} under {@code name}, replacing what the name referred to.
     *
     * @param requiredKernels functions that must exist in the image; if one is missing the load
     *     fails with {@link IllegalArgumentException} and the previous entry stays
     * @param name the registry name; replaces any entry of that name
     * @param image the image to load
     * @return what was loaded under the name
     * @throws CudaException when the driver rejects the image (e.g.
     *     {@code CUDA_ERROR_UNSUPPORTED_PTX_VERSION}, {@code CUDA_ERROR_INVALID_IMAGE})
     */
    public ModuleInfo load(String name, ModuleImage image, String... requiredKernels) {
        return install(name, image, image.loweredNames(), requiredKernels);
    }

    /**
     * {@return whether the driver has rejected a PTX image's ISA in this context
     * ({@code CUDA_ERROR_UNSUPPORTED_PTX_VERSION}): PTX newer than the driver knows} A compiler
     * that can emit CUBIN instead (NVRTC) then does so for this context.
     */
    public boolean isPtxRejected() {
        return ptxRejected;
    }

    private ModuleInfo install(String name, ModuleImage image, Map<String, String> lowered, String... requiredKernels) {
        context.checkOpen();
        state.calls().live(LOAD);
        state.reap();
        ModuleResource module;
        try {
            module = loadModule(name, image);
        } catch (CudaException e) {
            if (e.result() == UNSUPPORTED_PTX_VERSION && image.kind() == ModuleImage.Kind.PTX && !ptxRejected) {
                ptxRejected = true;
                LOG.info("The driver (CUDA {}) rejects the PTX ISA of {}; compilers that can emit CUBIN will from now on",
                        state.driver().version(), image.artifact());
            }
            throw ImageRejectedException.restate(e, image);
        }
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
        byte[] bytes = image.loadableBytes(); // PTX NUL-terminated
        MemorySegment handle;
        ModuleLoadEvent event = ModuleLoadEvent.start();
        boolean loaded = false;
        // Module load may synchronize: gated.
        try (var _ = state.enterSection(LOAD + "(" + image.artifact() + ")")) {
            handle = state.calls().modules().load(bytes, image.artifact());
            loaded = true;
        } finally {
            if (event != null) {
                event.device = state.device();
                event.name = name;
                event.artifact = image.artifact();
                event.format = image.kind().name();
                event.bytes = image.byteSize();
                event.loaded = loaded;
                event.commit();
            }
        }
        return new ModuleResource(state, handle, name, image.artifact(), image.sha256());
    }

    /** The CUfunction for {@code kernel}, or null when the module has no such function. */
    static MemorySegment function(ModuleResource module, String kernel) {
        // The module is loaded: the caller holds a reference.
        return module.context().calls().modules().function(module.handle(), kernel);
    }

    /**
     * A kernel of the module now registered under {@code name}, by function name or, for a
     * source compiled with name expressions, by name expression (e.g. {@code "scale<float>"}).
     * The kernel keeps that exact module alive, even if the name is later replaced; close it
     * when done.
     *
     * @param name the registry name
     * @param function the function name or name expression
     * @return the kernel, to close when done
     * @throws IllegalArgumentException when the name is not registered or has no such kernel
     */
    public Kernel kernel(String name, String function) {
        context.checkOpen();
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

    /**
     * What {@code name} refers to now.
     *
     * @param name the registry name
     * @return the entry, or empty when the name is not registered
     */
    public Optional<ModuleInfo> info(String name) {
        synchronized (entries) {
            Entry e = entries.get(name);
            return e == null ? Optional.empty() : Optional.of(info(name, e));
        }
    }

    private static ModuleInfo info(String name, Entry e) {
        return new ModuleInfo(name, e.kind, e.module.artifact(), e.module.sha256(), e.generation);
    }

    /** {@return the registered names, sorted} */
    public Set<String> names() {
        synchronized (entries) {
            return new TreeSet<>(entries.keySet());
        }
    }

    /**
     * Removes {@code name}; its module is unloaded once no kernel or graph uses it. Returns whether it existed.
     *
     * @param name the registry name
     * @return whether the name was registered
     */
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

    /** How many names are registered (each holds one module). */
    int entries() {
        synchronized (entries) {
            return entries.size();
        }
    }

    /** Drops every entry (context shutdown). */
    void clear() {
        for (String name : names()) {
            unload(name);
        }
    }
}
