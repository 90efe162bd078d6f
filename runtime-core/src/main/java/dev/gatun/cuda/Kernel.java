package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.ModuleResource;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.Retirement;
import dev.gatun.cuda.internal.driver.DriverFeature;
import dev.gatun.cuda.internal.driver.ModuleCalls;
import dev.gatun.cuda.internal.launch.LaunchChecks;
import dev.gatun.cuda.internal.launch.LaunchExConfig;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * One kernel ({@code CUfunction}) of one loaded module. A kernel keeps its exact module alive:
 * replacing the module's registry name does not change what this kernel runs. Close it when
 * done; the module is unloaded once nothing holds it and its launches have completed.
 */
public final class Kernel extends Owner {


    private final CudaContext context;
    private final ContextState contextState;
    private final Resource resource;
    private volatile KernelAttributes attributes;
    private volatile LaunchChecks.Target launchTarget;

    /** The reference this kernel holds on its module; retiring it drops that reference. */
    private static final class Resource extends NativeResource {
        final ModuleResource module;
        final MemorySegment function;
        final String name;
        /** The dynamic shared memory this function has been opted into (cuFuncSetAttribute). */
        int optedInSharedBytes;

        Resource(ContextState contextState, ModuleResource module, MemorySegment function, String name) {
            super(contextState, OwnerKind.KERNEL);
            this.module = module;
            this.function = function;
            this.name = name;
        }

        @Override
        protected Retirement.Release howToFree() {
            return Retirement.Release.withoutDriver(module::release);
        }

        @Override
        protected boolean synchronizingFree() {
            return false;
        }

        /** A kernel of another library's module is borrowed, in {@link LiveOwner#borrowed()}'s one meaning, like its module. */
        @Override
        public boolean borrowed() {
            return module.borrowed();
        }

        @Override
        public String identity() {
            return "Kernel#" + id() + " '" + name + "' of " + module.identity();
        }
    }

    Kernel(CudaContext context, ModuleResource module, MemorySegment function, String name) {
        Resource r = new Resource(context.state(), module, function, name);
        super(r);
        this.context = context;
        this.contextState = context.state();
        this.resource = r;
    }

    /**
     * {@return a kernel of a module another library loaded in {@code context}, without taking the module
     * over: it launches like any Gatun kernel (its launches are fenced), and closing it ends
     * Gatun's view once those launches completed; Gatun never unloads the module} The other
     * library must keep it loaded until then. The driver cannot tell which context a module
     * belongs to: a module of another context fails at launch with the driver's error.
     *
     * @param context the context the module was loaded in
     * @param foreignModule a loaded {@code CUmodule}
     * @param function the function's (mangled) name, looked up with {@code cuModuleGetFunction}
     * @throws IllegalArgumentException when the module has no such function
     */
    public static Kernel borrow(CudaContext context, MemorySegment foreignModule, String function) {
        Objects.requireNonNull(foreignModule, "foreignModule");
        Objects.requireNonNull(function, "function");
        context.checkOpen();
        if (foreignModule.address() == 0) {
            throw new IllegalArgumentException("cannot borrow a kernel from the NULL module");
        }
        ContextState state = context.state();
        MemorySegment f = state.calls().modules().function(foreignModule, function);
        if (f == null) {
            throw new IllegalArgumentException("module 0x" + Long.toHexString(foreignModule.address())
                    + " has no kernel '" + function + "' (cuModuleGetFunction: not found); C++ kernels need their "
                    + "mangled name, or extern \"C\"");
        }
        state.reap();
        return new Kernel(context, ModuleResource.borrow(state, foreignModule), f, function);
    }

    /** {@return the context this kernel was loaded in} */
    public CudaContext context() {
        return context;
    }

    /** {@return the kernel's function name, as it was looked up in its module} */
    public String name() {
        return resource.name;
    }

    /**
     * {@return the registry name of the module this kernel came from; empty for a
     * {@linkplain #isBorrowed() borrowed} kernel}
     */
    public String moduleName() {
        return resource.module.name();
    }

    /**
     * {@return hex SHA-256 of the exact image this kernel runs; empty for a {@linkplain #isBorrowed()
     * borrowed} kernel (Gatun never saw its image)}
     */
    public String moduleSha256() {
        return resource.module.sha256();
    }

    /**
     * {@return whether this kernel is {@linkplain LiveOwner#borrowed() borrowed}: it comes from another
     * library's module ({@link Kernel#borrow}), which Gatun never unloads}
     */
    public boolean isBorrowed() {
        return resource.module.borrowed();
    }

    /**
     * {@return the raw {@code CUfunction}, for interop} Valid while this kernel is open: Gatun unloads its
     * own modules once nothing holds them and their launches completed, so other code must not
     * unload the module, nor launch the function after {@link #close()} (Gatun does not see
     * launches made through the raw handle, and cannot wait for them).
     */
    public MemorySegment handle() {
        return function();
    }

    /**
     * {@return the raw {@code CUmodule} this kernel's function belongs to; valid, and owned, as {@link #handle()}; NULL
     * for a kernel of a {@link KernelLibrary}, whose code the driver keeps in the library}
     */
    public MemorySegment moduleHandle() {
        resource.checkOpen();
        return resource.module.handle();
    }

    ModuleResource module() {
        return resource.module;
    }

    MemorySegment function() {
        resource.checkOpen();
        return resource.function;
    }

    void checkOpen() {
        resource.checkOpen();
    }

    /**
     * {@return one attribute's value ({@code cuFuncGetAttribute})}
     *
     * @param attribute which attribute
     */
    public int attribute(KernelAttribute attribute) {
        resource.checkOpen();
        return contextState.calls().modules().attribute(resource.function, attribute.code);
    }

    /**
     * Sets an attribute ({@code cuFuncSetAttribute}), e.g. the preferred shared memory carveout.
     *
     * @param attribute an attribute the driver lets callers set
     * @param value the new value
     * @throws CudaException when the driver refuses the attribute or the value
     */
    public void setAttribute(KernelAttribute attribute, int value) {
        resource.checkOpen();
        contextState.calls().modules().setAttribute(resource.function, attribute.code, value);
        attributes = null;
    }

    /** {@return registers, shared/constant/local memory, thread limit and versions} */
    public KernelAttributes attributes() {
        KernelAttributes a = attributes;
        if (a == null) {
            a = new KernelAttributes(attribute(KernelAttribute.NUM_REGS),
                    attribute(KernelAttribute.SHARED_SIZE_BYTES),
                    attribute(KernelAttribute.CONST_SIZE_BYTES),
                    attribute(KernelAttribute.LOCAL_SIZE_BYTES),
                    attribute(KernelAttribute.MAX_THREADS_PER_BLOCK),
                    attribute(KernelAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES),
                    attribute(KernelAttribute.PTX_VERSION),
                    attribute(KernelAttribute.BINARY_VERSION));
            attributes = a;
        }
        return a;
    }

    /**
     * One parameter's place in the kernel's argument buffer.
     *
     * @param byteOffset where the parameter starts, in bytes
     * @param byteSize the parameter's size in bytes
     */
    public record Parameter(long byteOffset, long byteSize) {
    }

    /**
     * {@return the kernel's parameters ({@code cuFuncGetParamInfo}); empty when the driver is older than
     * CUDA 12.4 and cannot tell}
     */
    public Optional<List<Parameter>> parameters() {
        List<ModuleCalls.Parameter> params = parameterInfo();
        return params == null ? Optional.empty()
                : Optional.of(params.stream().map(p -> new Parameter(p.offset(), p.size())).toList());
    }

    /** The parameters as layer 2 reports them, or null when the driver cannot tell. */
    private List<ModuleCalls.Parameter> parameterInfo() {
        resource.checkOpen();
        if (!contextState.driver().supports(DriverFeature.PARAMETER_INFO)) {
            return null;
        }
        return contextState.calls().modules().parameters(resource.function);
    }

    /**
     * How many blocks of this size can be resident on one multiprocessor.
     *
     * @param blockThreads threads per block
     * @param dynamicSharedBytes dynamic shared memory per block, in bytes
     * @return the number of resident blocks ({@code cuOccupancyMaxActiveBlocksPerMultiprocessor})
     */
    public int maxActiveBlocksPerMultiprocessor(int blockThreads, long dynamicSharedBytes) {
        resource.checkOpen();
        return contextState.calls().modules().maxActiveBlocksPerMultiprocessor(resource.function, blockThreads,
                dynamicSharedBytes);
    }

    /**
     * A block size that maximizes occupancy, and the smallest grid that reaches it.
     *
     * @param minGridSize the smallest grid that reaches full occupancy with that block size
     * @param blockSize the suggested threads per block
     */
    public record BlockSizeSuggestion(int minGridSize, int blockSize) {
    }

    /**
     * Suggests a block size for a fixed amount of dynamic shared memory per block (0 = no limit on block size).
     *
     * @param dynamicSharedBytes dynamic shared memory per block, in bytes
     * @param blockSizeLimit the largest block size to consider; 0 for no limit
     * @return the block size and grid size ({@code cuOccupancyMaxPotentialBlockSize})
     */
    public BlockSizeSuggestion suggestBlockSize(long dynamicSharedBytes, int blockSizeLimit) {
        resource.checkOpen();
        ModuleCalls.BlockSize s = contextState.calls().modules().suggestBlockSize(resource.function, dynamicSharedBytes,
                blockSizeLimit);
        return new BlockSizeSuggestion(s.minGridSize(), s.blockSize());
    }

    /**
     * How many clusters of {@code config}'s shape can be co-resident (compute capability 9.0+).
     *
     * @param config a configuration with a cluster shape
     * @return the number of clusters ({@code cuOccupancyMaxActiveClusters})
     */
    public int maxActiveClusters(LaunchConfig config) {
        resource.checkOpen();
        if (!config.hasCluster()) {
            throw new IllegalArgumentException("maxActiveClusters needs a cluster shape (LaunchConfig.withCluster)");
        }
        try (LaunchExConfig ex = new LaunchExConfig(config)) {
            ex.setStream(MemorySegment.NULL);
            // ex is a complete CUlaunchConfig with its attribute array, alive for the call.
            return contextState.calls().modules().maxActiveClusters(resource.function, ex.segment());
        }
    }

    /**
     * What {@link LaunchChecks} checks a launch of this kernel against. Built once: the device's
     * limits, the function's attributes, its parameter list ({@code cuFuncGetParamInfo}, one
     * driver call per parameter) and the context's stream priority range (read when the context
     * opened) never change for a loaded function, and prepare() is on the
     * path of every launch that is not reused.
     */
    LaunchChecks.Target launchTarget() {
        LaunchChecks.Target t = launchTarget;
        if (t == null) {
            t = new LaunchChecks.Target("kernel '" + name() + "' on device " + context.device().ordinal(),
                    context.device().capabilities(), attributes().maxThreadsPerBlock(),
                    attributes().registersPerThread(), parameterInfo(),
                    contextState.calls().modules(), function(), context.greatestStreamPriority(),
                    context.leastStreamPriority());
            launchTarget = t; // a race builds an equal one twice
        }
        return t;
    }

    /**
     * Opts this function into {@code bytes} of dynamic shared memory per block when that is more
     * than the default budget; checks it against the device's opt-in ceiling net of the
     * function's static shared memory.
     *
     * @throws IllegalArgumentException when even the opt-in ceiling is too small
     */
    void ensureDynamicSharedMemory(int bytes) {
        DeviceCapabilities caps = context.device().capabilities();
        int staticBytes = attributes().staticSharedBytes();
        int defaultBudget = caps.sharedMemoryPerBlock() - staticBytes;
        int optInBudget = caps.sharedMemoryPerBlockOptIn() - staticBytes;
        if (bytes > optInBudget) {
            throw new IllegalArgumentException("kernel '" + name() + "' asks for " + bytes + " bytes of dynamic shared "
                    + "memory, but device " + context.device().ordinal() + " allows at most " + optInBudget
                    + " per block for it (" + caps.sharedMemoryPerBlockOptIn() + " opt-in ceiling - " + staticBytes
                    + " static)");
        }
        if (bytes > defaultBudget) {
            synchronized (resource) {
                if (resource.optedInSharedBytes < bytes) {
                    setAttribute(KernelAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
                    resource.optedInSharedBytes = bytes;
                }
            }
        }
    }

    /**
     * Prepares a launch: checks the configuration and the arguments against this kernel and
     * device, and builds the native argument block once. The returned launch can be submitted
     * any number of times, and its arguments updated in place, without allocating.
     *
     * @param config grid, block, shared memory and launch attributes
     * @param args the kernel's arguments, in parameter order
     * @return the prepared launch
     * @throws IllegalArgumentException when the configuration or arguments cannot work
     * @throws ContextPoisonedException when a sticky error poisoned the context
     */
    public KernelLaunch prepare(LaunchConfig config, KernelArg... args) {
        resource.checkOpen();
        // Once the launch target is cached, preparing makes no driver call, so the checked
        // layer's poison check would not see it: ask it here, as every other call does.
        contextState.calls().live("Kernel.prepare");
        return new KernelLaunch(this, config, args);
    }

    /**
     * Prepares and submits one launch (allocates; prefer {@link #prepare} on hot paths).
     *
     * @param stream the stream the launch is queued on
     * @param config grid, block, shared memory and launch attributes
     * @param args the kernel's arguments, in parameter order
     */
    public void launch(Stream stream, LaunchConfig config, KernelArg... args) {
        prepare(config, args).launch(stream);
    }

}
