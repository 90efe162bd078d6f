package dev.gatun.testkit;

import dev.gatun.cuda.ContextOptions;
import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.LiveOwner;
import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.testing.FaultPlan;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The GPU one test runs on: device 0 of a real driver, or a {@link SimulatedGpu}. Either way the
 * test gets a Gatun {@link CudaContext} of its own, {@linkplain #kernel kernels} registered by
 * name (real code on the GPU, a Java body on the simulator), {@linkplain #faults() faults}
 * injected into the driver calls of that context, and on {@link #close()} a check that it left
 * nothing open.
 *
 * <p>Hand {@link #context()} to the code under test: faults and the leak check reach only the
 * work done through it. Its {@link Cuda} is the test's own, even on a GPU (a second view of the
 * process's driver, with the faults in front of it), so owners of {@code Cuda.system()}'s
 * contexts cannot be mixed with it.
 *
 * <p>{@link GpuOrSimulated} makes one per test; {@link #open(TestTarget)} makes one anywhere else.
 * Not for concurrent use by several tests; one test's threads may share it.
 */
public abstract sealed class GpuUnderTest implements AutoCloseable permits SimulatedGpu, RealGpu {

    /** Gatun's library packages, which an owner's allocation site passes through before the caller's code (an application may live under dev.gatun.cuda too). */
    private static final Set<String> LIBRARY = Set.of("dev.gatun.cuda", "dev.gatun.cuda.nvrtc", "dev.gatun.cuda.graph");
    /** The testkit's classes that make owners for the caller ({@link #kernel}). */
    private static final Set<String> TESTKIT = Set.of(GpuUnderTest.class.getName(), SimulatedGpu.class.getName(),
            RealGpu.class.getName());

    private final Cuda cuda;
    private final Faults faults;
    private ContextOptions options = ContextOptions.defaults().withLeakTracking(true);
    private CudaContext context;
    /** The ids of the owners the context made for itself as it opened (its streams, its view of the default pool). */
    private Set<Long> own;
    private boolean closed;

    GpuUnderTest(Cuda cuda, FaultPlan plan) {
        this.cuda = cuda;
        this.faults = new Faults(plan);
    }

    /**
     * Opens the GPU a target names.
     *
     * @param target where to run; {@link TestTarget#AUTO} picks the real GPU when Gatun's loader finds
     *     a driver that reports a device
     * @return a simulated GPU, or device 0 of the real driver
     * @throws dev.gatun.cuda.CudaUnavailableException for {@link TestTarget#GPU} without a usable
     *     driver, with every place the loader tried
     * @throws IllegalStateException for {@link TestTarget#GPU} when the driver reports no device;
     *     when the module system keeps gatun-core's driver seam from the testkit (gatun-core on the
     *     module path, the testkit on the class path), saying what to change
     */
    public static GpuUnderTest open(TestTarget target) {
        return target.onGpu(TestTarget::gpuPresent) ? new RealGpu() : new SimulatedGpu();
    }

    /** {@return whether this is the simulated driver (else a real GPU)} */
    public abstract boolean isSimulated();

    /** {@return the test's own view of the driver, whose every call passes through {@link #faults()}} */
    public Cuda cuda() {
        return cuda;
    }

    /** {@return the faults planned for this GPU's driver calls, and their counts} */
    public Faults faults() {
        return faults;
    }

    /**
     * Sets the options the context opens with; before {@link #context()} is first called. The
     * default is {@code ContextOptions.defaults().withLeakTracking(true)}, so that a leak is
     * reported with where each owner was made.
     *
     * @param contextOptions the options, e.g. with the device pool off, so that every allocation
     *     reaches the driver where {@link #faults()} can fail it
     * @return this
     * @throws IllegalStateException when the context is already open
     */
    public synchronized GpuUnderTest contextOptions(ContextOptions contextOptions) {
        if (context != null) {
            throw new IllegalStateException("the context is already open with " + options + "; set its options before "
                    + "the first context() or kernel(...)");
        }
        options = Objects.requireNonNull(contextOptions, "contextOptions");
        return this;
    }

    /**
     * {@return device 0's context, opened on first use with {@link #contextOptions}'s options}
     *
     * @throws IllegalStateException when this GPU has been closed
     */
    public synchronized CudaContext context() {
        if (closed) {
            throw new IllegalStateException(this + " is closed: its context belonged to a test that has ended");
        }
        if (context == null) {
            context = cuda.device(0).context(options);
            own = options.leakTracking() ? context.diagnostics().liveOwners().stream().map(LiveOwner::id).collect(Collectors.toSet())
                    : Set.of();
        }
        return context;
    }

    /**
     * Registers a kernel and returns it: on a real GPU, {@code code} compiled (CUDA source, with
     * Gatun's NVRTC API, cached on disk) or loaded (PTX); on the simulator, {@code body} runs for
     * each launch. Either way the context's module registry holds it as module {@code name}, and
     * Gatun checks launches against the parameters {@code code} declares.
     *
     * @param name the kernel's name in {@code code}, also the module's name in
     *     {@code context().modules()} (a later registration under the name replaces it)
     * @param code the kernel's real code
     * @param body what a launch does on the simulator; it should compute what {@code code} does
     * @return the kernel, which the caller closes
     * @throws IllegalArgumentException when {@code code} has no such kernel
     * @throws dev.gatun.cuda.CudaUnavailableException on a real GPU, for CUDA source where NVRTC
     *     cannot be loaded
     */
    public Kernel kernel(String name, KernelCode code, JavaKernel body) {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(code, "code");
        Objects.requireNonNull(body, "body");
        CudaContext ctx = context();
        load(ctx, name, code, body);
        return ctx.modules().kernel(name, name);
    }

    /** Loads {@code name} into {@code ctx}'s registry as this target runs it. */
    abstract void load(CudaContext ctx, String name, KernelCode code, JavaKernel body);

    /**
     * Runs {@code work} while {@code stream} is busy: on the simulator, nothing queued on the
     * stream runs until {@code work} returns (or a host wait needs it: a synchronous copy, a
     * synchronize), so work queued on other streams meanwhile runs first unless it waits for this
     * stream's. That is how a test proves a cross-stream dependency (an event wait) is there:
     * without it, the dependent work reads what the held work has not written yet. On a real
     * GPU, {@code work} just runs: the GPU's own timing decides, and the test checks the results.
     *
     * <p>On the simulator this takes {@link Stream#handle()}, which marks the stream exported: Gatun
     * then orders every later synchronous operation of the context after it, as it does for a
     * stream whose handle another library has.
     *
     * @param stream the stream to hold
     * @param work what to do meanwhile, typically queueing work on this and other streams
     */
    public abstract void holdWhile(Stream stream, Runnable work);

    /**
     * Closes the context (faults cleared first, so that its own calls reach the driver) and
     * checks that the test left nothing behind. Idempotent.
     *
     * @throws IllegalStateException naming each owner left open (with where it was made, under
     *     leak tracking), in which case the context stays open; on the simulator also for work
     *     that failed as the simulated GPU ran it (a {@link JavaKernel} that threw, a copy from
     *     freed memory) and for frees that would have been unsafe on a GPU
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        faults.clear();
        if (context == null) {
            return;
        }
        CudaContext ctx = context;
        try {
            ctx.close();
        } catch (IllegalStateException refused) {
            throw new IllegalStateException(refused.getMessage() + openOwners(ctx, own), refused);
        }
        List<String> problems = afterContextClosed(ctx.diagnostics().poisonedBy().isPresent());
        if (!problems.isEmpty()) {
            throw new IllegalStateException(this + " saw what a real GPU would not survive:\n  "
                    + String.join("\n  ", problems));
        }
    }

    /**
     * What the driver saw go wrong during the test, checked once the context is closed; empty on
     * a real GPU, where a failure surfaces as an error from a call instead.
     *
     * @param poisoned whether a sticky error poisoned the context (Gatun then abandons what it can
     *     no longer free, so nothing left allocated counts as a leak)
     */
    abstract List<String> afterContextClosed(boolean poisoned);

    /**
     * The owners a refused close left open, named, without the context's own ({@code own}) and
     * its registry's modules, which its close retires itself.
     */
    private static String openOwners(CudaContext ctx, Set<Long> own) {
        if (!ctx.options().leakTracking()) {
            return " (open the context with leak tracking to see where each was made)";
        }
        ctx.reap(); // owners closed but not yet retired are listed until their work is known done
        List<String> open = new ArrayList<>();
        for (LiveOwner owner : ctx.diagnostics().liveOwners()) {
            if (owner.kind() != OwnerKind.MODULE && !own.contains(owner.id())) {
                open.add(owner.identity() + site(owner));
            }
        }
        return ":\n  " + String.join("\n  ", open);
    }

    /** Where an owner was made: the first frames past Gatun's and the testkit's own. */
    private static String site(LiveOwner owner) {
        return owner.allocationSite().stream().dropWhile(f -> LIBRARY.contains(packageOf(f))
                || packageOf(f).startsWith("dev.gatun.cuda.internal") || TESTKIT.contains(f.getClassName()))
                .takeWhile(f -> !packageOf(f).startsWith("org.junit.") && !packageOf(f).endsWith(".reflect")).limit(4)
                .map(f -> "\n      at " + f).collect(Collectors.joining());
    }

    private static String packageOf(StackTraceElement frame) {
        String c = frame.getClassName();
        return c.substring(0, Math.max(c.lastIndexOf('.'), 0));
    }
}
