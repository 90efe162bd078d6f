package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.Completions;
import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.driver.ContextCalls;
import dev.gatun.cuda.internal.driver.GreenContextCalls;
import dev.gatun.cuda.internal.memory.OutOfMemoryLadder;
import dev.gatun.cuda.internal.memory.PoolRegistry;
import dev.gatun.cuda.internal.memory.Recyclers;
import dev.gatun.cuda.internal.memory.SoftLimits;
import dev.gatun.cuda.internal.nvtx.AutomaticRanges;
import dev.gatun.cuda.internal.pool.DevicePool;
import dev.gatun.cuda.internal.pool.DevicePoolBackend;
import dev.gatun.cuda.internal.transfer.StagingPool;
import dev.gatun.cuda.internal.transfer.SynchronousCopies;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Objects;

/**
 * Gatun's state for one device's primary context: its streams, memory, retirement queue and
 * capture gate. Obtain it with {@link Device#context()}; every owner made from it belongs to it.
 * What it can tell about itself (live owners, counters, memory) is in {@link #diagnostics()}.
 *
 * <p>The primary context is retained once per process and never released: releasing it would
 * synchronize the device and break other threads' captures. {@link #close()} shuts down
 * Gatun's state instead, and refuses while owners made from it are still open.
 *
 * <p>Owners can be used from any thread, platform or virtual: every driver call Gatun makes sets
 * or checks the current context on the OS thread it runs on (runtime-core's README, "Virtual
 * threads and the current context", says which waits park, and each owner's thread-safety
 * contract). Closed owners are freed at safe points: allocations, owner creation and close,
 * synchronizations, and {@link #reap()}.
 *
 * <p>A <em>green</em> context ({@link #isGreen()}, {@link Device#partitionSms}) is one group of a
 * device's SMs, used like the primary context; its {@link #close()} drains it, then destroys it.
 */
public final class CudaContext implements AutoCloseable {

    private static final String SYNCHRONIZE = "cuCtxSynchronize";
    private static final int OWN_STREAMS = 2; // computeStream and copyStream, which close retires itself

    private final Device device;
    private final ContextState contextState;
    private final Stream computeStream;
    private final Stream copyStream;
    private final ContextCalls.StreamPriorities priorities;
    private final StagingPool staging;
    private final SynchronousCopies copies;
    private final ModuleRegistry modules;
    private final ContextOptions options;
    private final DevicePool pool;
    private final Recyclers recyclers = new Recyclers();
    private final DevicePoolView devicePool;
    private final ContextDiagnostics diagnostics;
    private final PoolRegistry pools = new PoolRegistry(); // for the out-of-memory ladder, soft limits and reports
    private final OutOfMemoryLadder ladder;
    private final SoftLimits softLimits;
    private final MemoryPool defaultMemoryPool; // the driver is asked for the pool on first use
    private final GreenContext green; // null for the primary context

    record GreenContext(MemorySegment handle, GreenContextCalls calls, int smCount) {
    }

    /** {@code handle}: the retained primary context, or the {@code CUcontext} of {@code green}, which close destroys. */
    CudaContext(Device device, MemorySegment handle, GreenContext green, ContextOptions options) {
        AutomaticRanges.checkSetting(); // a misspelt gatun.nvtx.* setting fails here, not silently
        this.device = device;
        this.options = options;
        this.green = green;
        this.contextState = new ContextState(device.cuda().driver(), device.ordinal(), handle,
                green == null ? MemorySegment.NULL : green.handle(), options.gateTimeout(), options.leakTracking());
        contextState.attachApi(this);
        this.pool = new DevicePool(new DevicePoolBackend(contextState), options.devicePool());
        contextState.stats().attach(pool); // the pool counts its cuMemAlloc/cuMemFree calls and bytes once, for both
        this.devicePool = new DevicePoolView(this, contextState, pool);
        this.ladder = new OutOfMemoryLadder(contextState, pool, pools, options.outOfMemoryLadder());
        this.softLimits = new SoftLimits(contextState, pool, pools);
        this.diagnostics = new ContextDiagnostics(this, contextState, ladder, devicePool);
        device.applyCoredumps(contextState, options.coredumps()); // before any work of this context can fault
        this.priorities = contextState.calls().context().streamPriorities();
        this.staging = new StagingPool(contextState);
        this.copies = new SynchronousCopies(contextState, staging);
        this.computeStream = new Stream(this, 0, true);
        this.copyStream = new Stream(this, 0, true);
        contextState.openSyncStream();
        this.modules = new ModuleRegistry(this);
        this.defaultMemoryPool = MemoryPool.deviceDefault(this);
    }

    /** {@return the device this context belongs to} */
    public Device device() {
        return device;
    }

    /** {@return whether this is a green context: one group of SMs of a {@link SmPartition}} */
    public boolean isGreen() {
        return green != null;
    }

    /** {@return the SMs this context's kernels run on: a green context's share, or the whole device's} */
    public int smCount() {
        return green != null ? green.smCount() : device.capabilities().multiprocessorCount();
    }

    /** The context's machinery, for its owners: state, staging, copies, pools, recyclers, ladder. */
    ContextState state() {
        return contextState;
    }

    StagingPool staging() {
        return staging;
    }

    SynchronousCopies copies() {
        return copies;
    }

    DevicePool pool() {
        return pool;
    }

    Recyclers recyclers() {
        return recyclers;
    }

    OutOfMemoryLadder ladder() { // climbed from an allocation's catch block, with no stream's lock held
        return ladder;
    }

    PoolRegistry pools() {
        return pools;
    }

    /** {@return the options this context was opened with} */
    public ContextOptions options() {
        return options;
    }

    /** {@return what this context can tell about itself: live owners, counters, memory and health} */
    public ContextDiagnostics diagnostics() {
        return diagnostics;
    }

    /** {@return the modules loaded in this context, by name} */
    public ModuleRegistry modules() {
        checkOpen();
        return modules;
    }

    /** {@return the context's stream for kernels} Owned by the context: closing it does nothing. */
    public Stream computeStream() {
        checkOpen();
        return computeStream;
    }

    /** {@return the context's stream for copies, separate from {@link #computeStream()} so the two overlap} */
    public Stream copyStream() {
        checkOpen();
        return copyStream;
    }

    /** {@return a new empty graph, to build node by node and {@linkplain Graph#instantiate() instantiate}} */
    public Graph createGraph() {
        checkOpen();
        return Graph.create(this);
    }

    /** {@return a new non-blocking stream with the default priority (0)} */
    public Stream createStream() {
        return createStream(0);
    }

    /**
     * {@return a new non-blocking stream (it does not synchronize with the legacy default stream)}
     *
     * @param priority from {@link #greatestStreamPriority()} (highest) to {@link #leastStreamPriority()}
     */
    public Stream createStream(int priority) {
        checkOpen();
        if (priority < priorities.greatest() || priority > priorities.least()) {
            throw new IllegalArgumentException("stream priority " + priority + " is outside this device's range "
                    + priorities.greatest() + " (highest) .. " + priorities.least() + " (lowest); lower numbers mean "
                    + "higher priority");
        }
        contextState.reap();
        return new Stream(this, priority, false);
    }

    /** {@return the lowest priority a stream can have (the largest number; 0 on current GPUs)} */
    public int leastStreamPriority() {
        return priorities.least();
    }

    /** {@return the highest priority a stream can have (the smallest number, e.g. -5)} */
    public int greatestStreamPriority() {
        return priorities.greatest();
    }

    /**
     * Loads a kernel library ({@code cuLibraryLoadData}) for every context of the same {@link Cuda}
     * ({@link KernelLibrary#kernel(String, CudaContext)}), and into this one at once.
     *
     * @param image the library's code, checked as {@link ModuleRegistry#load} checks it
     * @return the loaded library, to close when done
     * @throws ImageRejectedException when the driver rejects the image; nothing stays loaded
     * @throws CudaException when the load fails otherwise
     */
    public KernelLibrary loadLibrary(ModuleImage image) {
        Objects.requireNonNull(image, "image");
        safePoint();
        return KernelLibrary.load(this, image);
    }

    /**
     * {@return the raw {@code CUcontext}, for interop (runtime-core's README, "Foreign handles: who
     * frees what"): the primary context, or a green context's, valid until {@link #close()}}
     */
    public MemorySegment handle() {
        checkOpen();
        return contextState.handle();
    }

    /** {@return a fence event (timing disabled): the cheapest way to order and observe work} */
    public Event createEvent() {
        safePoint();
        return new Event(this, false);
    }

    /** {@return an event that records timestamps, for {@link Event#elapsedMillis(Event)}} */
    public Event createTimingEvent() {
        safePoint();
        return new Event(this, true);
    }

    /** {@return a fence event other processes can open ({@link Event#exportForIpc()}; timing disabled)} */
    public Event createInterprocessEvent() {
        safePoint();
        return Event.interprocess(this);
    }

    /**
     * Allocates device memory, not initialized ({@code cuMemAlloc}, through the context's
     * size-classed pool, which reuses a block whose last use completed without a driver call).
     *
     * @param bytes how many bytes to allocate; 0 gives a 0-byte buffer with no native allocation
     * @return the new buffer, to close when done
     * @throws CaptureActiveException when a global capture on this context stays active past the gate timeout
     * @throws OutOfDeviceMemoryException when the out-of-memory ladder could not make room
     */
    public DeviceBuffer allocate(long bytes) {
        checkOpen();
        if (bytes < 0) {
            throw new IllegalArgumentException("cannot allocate a negative size: " + bytes);
        }
        contextState.reap();
        return DeviceBuffer.allocate(this, bytes);
    }

    /**
     * A new CUDA memory pool ({@code cuMemPoolCreate}) for {@link MemoryPool#allocate}, destroyed
     * once closed and every allocation from it freed.
     *
     * @param options the pool's release threshold, reuse policies, caps and export handle
     * @return the new pool, to close when done
     * @throws CudaException e.g. {@code CUDA_ERROR_NOT_SUPPORTED} on a device without memory pools
     */
    public MemoryPool createMemoryPool(MemoryPoolOptions options) {
        Objects.requireNonNull(options, "options");
        safePoint();
        return MemoryPool.create(this, options);
    }

    /** {@return the device's default memory pool, which {@link Stream#allocate} uses; the driver's: close does nothing} */
    public MemoryPool defaultMemoryPool() {
        checkOpen();
        return defaultMemoryPool;
    }

    /**
     * {@return a growable buffer, with nothing mapped yet: {@code reserveGrowable(GrowableBufferOptions.exactly(maxBytes))}}
     *
     * @param maxBytes the most the buffer may grow to, in bytes
     */
    public GrowableBuffer reserveGrowable(long maxBytes) {
        return reserveGrowable(GrowableBufferOptions.exactly(maxBytes));
    }

    /**
     * Reserves device address space for a {@link GrowableBuffer}, with nothing mapped yet.
     *
     * @param options how much address space to reserve, and in which chunks
     * @return the new buffer, to close when done
     * @throws CudaException {@code CUDA_ERROR_NOT_SUPPORTED} on a device without virtual memory
     *     management; the driver's error when even the minimum reservation is refused
     */
    public GrowableBuffer reserveGrowable(GrowableBufferOptions options) {
        Objects.requireNonNull(options, "options");
        safePoint();
        return GrowableBuffer.reserve(this, options);
    }

    /**
     * {@return new page-locked host memory, not write-combined (host reads stay fast), to close when done}
     *
     * @param bytes how many bytes to allocate
     */
    public PinnedBuffer allocatePinned(long bytes) {
        return allocatePinned(bytes, false);
    }

    /**
     * {@return new page-locked host memory ({@code cuMemHostAlloc}, portable), to close when done}
     *
     * @param bytes how many bytes to allocate
     * @param writeCombined faster to the device but very slow for the host to read: for upload-only buffers
     */
    public PinnedBuffer allocatePinned(long bytes, boolean writeCombined) {
        checkOpen();
        if (bytes < 0) {
            throw new IllegalArgumentException("cannot allocate a negative size: " + bytes);
        }
        contextState.reap();
        return PinnedBuffer.allocate(this, bytes, writeCombined);
    }

    /** {@return a new {@link MappedWord}, set to 0, that the GPU sets and the host polls; to close when done} */
    public MappedWord allocateMappedWord() {
        safePoint();
        return MappedWord.allocate(this);
    }

    /**
     * Lets this context's kernels and copies access {@code peer}'s device memory directly
     * ({@code cuCtxEnablePeerAccess}); idempotent and thread-safe.
     *
     * @param peer the context whose device memory becomes accessible; another device's
     * @throws IllegalArgumentException when the two devices cannot access each other
     */
    public void enablePeerAccess(CudaContext peer) {
        checkOpen();
        peer.checkOpen();
        if (peer == this) {
            throw new IllegalArgumentException("a context needs no peer access to itself");
        }
        if (contextState.peers().enabled(peer.contextState)) {
            return;
        }
        if (!device.canAccessPeer(peer.device)) {
            throw new IllegalArgumentException("device " + device.ordinal() + " cannot access device "
                    + peer.device.ordinal() + "'s memory (cuDeviceCanAccessPeer is 0); copies between them stage "
                    + "through the host instead");
        }
        contextState.peers().enable(peer.contextState);
    }

    /**
     * {@return whether {@link #enablePeerAccess} made {@code peer}'s memory accessible to this context}
     *
     * @param peer the other device's context
     */
    public boolean isPeerAccessEnabled(CudaContext peer) {
        return peer == this || contextState.peers().enabled(peer.contextState) && peer.device.cuda() == device.cuda();
    }

    /** Waits for all work of this context (inside the capture gate), then does what {@link #reap()} does. */
    public void synchronize() {
        checkOpen();
        contextState.calls().live(SYNCHRONIZE);
        contextState.stats().forcedSynchronizations.increment();
        try (var _ = contextState.enterSection(SYNCHRONIZE)) {
            contextState.calls().context().synchronize();
        }
        contextState.reap();
        softLimits.atSafePoint();
    }

    /** Frees what was closed and whose work completed, without blocking; trims pools idle above their soft limits. */
    public void reap() {
        safePoint();
        softLimits.atSafePoint();
    }

    /** {@return how long a synchronizing call waits for another thread's global capture before failing} */
    public Duration gateTimeout() {
        return contextState.gate().bound();
    }

    /**
     * Sets how long a synchronizing call waits for another thread's global capture before failing
     * with {@link CaptureActiveException}.
     *
     * @param timeout the new bound; zero fails at once, a negative one is refused
     */
    public void setGateTimeout(Duration timeout) {
        contextState.gate().setBound(timeout);
    }

    /** {@return whether this context has been closed} */
    public boolean isClosed() {
        return contextState.isClosed();
    }

    void checkOpen() {
        contextState.checkOpen();
    }

    /** Where every factory starts: refuses once closed, then frees what has become due. */
    private void safePoint() {
        contextState.checkOpen();
        contextState.reap();
    }

    /** Throws {@link IllegalArgumentException} unless {@code other} is this context. */
    void checkSame(CudaContext other, Object what) {
        // what: a constant, or an owner whose toString names it only for the refusal (nothing built on a hot path)
        if (other != this) {
            throw new IllegalArgumentException(what + " belongs to " + other.name() + "'s context, but is used with "
                    + name() + "'s; use owners of one context together (a peer copy moves data between devices; a "
                    + "KernelLibrary gives a kernel for each context)");
        }
    }

    private String name() {
        return "device " + device.ordinal() + (green == null ? "" : " (green context 0x"
                + Long.toHexString(green.handle().address()) + ", " + green.smCount() + " SMs)");
    }

    /** Throws {@link IllegalArgumentException} unless {@code other} comes from the same {@link Cuda}. */
    void checkSameDriver(CudaContext other, String what) {
        if (other.device.cuda() != device.cuda()) {
            throw new IllegalArgumentException(what + " belongs to another Cuda instance; use owners of one Cuda "
                    + "(Cuda.system()) together");
        }
    }

    /**
     * Shuts down Gatun's state for this context: runs the {@link Stream#onClose} actions of its own
     * streams (even when the close is then refused), drains the retirement queue and destroys the
     * context's own streams, staging memory and pooled events. The primary context stays retained.
     *
     * @throws IllegalStateException when owners made from this context are still open (nothing
     *     changes then); close them first
     */
    @Override
    public synchronized void close() {
        if (contextState.isClosed()) {
            return;
        }
        // Its own streams close with it: what other libraries keep for them (Stream.onClose) goes
        // first, so buffers those actions close are not counted as open below.
        computeStream.runCloseActions();
        copyStream.runCloseActions();
        StringBuilder open = new StringBuilder();
        for (OwnerKind kind : OwnerKind.values()) {
            // The context's own, which this close retires itself.
            long own = switch (kind) {
                case STREAM -> OWN_STREAMS;
                case MEMORY_POOL -> 1;
                case MODULE -> modules.entries();
                case STAGING -> contextState.live(kind);
                default -> 0;
            };
            long n = contextState.live(kind) - own;
            if (n > 0) {
                open.append(open.isEmpty() ? "" : ", ").append(n).append(' ').append(kind);
            }
        }
        if (!open.isEmpty()) {
            throw new IllegalStateException("cannot close the context of device " + device.ordinal()
                    + " while owners made from it are open (" + open + "); close them first");
        }
        contextState.markClosed();
        modules.clear();
        computeStream.retire();
        copyStream.retire();
        contextState.retireSyncStream();
        defaultMemoryPool.retire();
        staging.close();
        try {
            if (contextState.poisoned()) {
                contextState.reap(); // abandons what a poisoned context can no longer free, with a log line each
            } else {
                contextState.drain("CudaContext.close");
                devicePool.trimNow();
            }
        } finally {
            Completions.contextClosed(contextState); // after the drain; what a failed drain left pending fails
        }
        device.contextClosed(this);
        if (green != null) {
            // Drained above (a poisoned context's abandoned handles die with it); the driver releases the primary context.
            int r = green.calls().destroy(green.handle());
            if (r != 0) {
                throw green.calls().failure(r);
            }
        }
    }

    @Override
    public String toString() {
        return "CudaContext[device " + device.ordinal() + (green != null ? ", green, " + green.smCount() + " SMs" : "")
                + (contextState.isClosed() ? ", closed]" : "]");
    }
}
