package dev.gatun.cuda;

import dev.gatun.cuda.internal.context.Completions;
import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.ContextStats;
import dev.gatun.cuda.internal.context.ForeignHandles;
import dev.gatun.cuda.internal.context.ModuleResource;
import dev.gatun.cuda.internal.driver.ContextCalls;
import dev.gatun.cuda.internal.driver.GraphMemoryCalls;
import dev.gatun.cuda.internal.driver.GreenContextCalls;
import dev.gatun.cuda.internal.memory.OutOfMemoryLadder;
import dev.gatun.cuda.internal.memory.PoolRegistry;
import dev.gatun.cuda.internal.memory.Recyclers;
import dev.gatun.cuda.internal.memory.SoftLimits;
import dev.gatun.cuda.internal.pool.DevicePool;
import dev.gatun.cuda.internal.pool.DevicePoolBackend;
import dev.gatun.cuda.internal.transfer.StagingPool;
import dev.gatun.cuda.internal.transfer.SynchronousCopies;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Gatun's state for one device's primary context: its streams, memory, retirement queue and
 * capture gate. Obtain it with {@link Device#context()}; every owner made from it belongs to it.
 *
 * <p>The primary context is retained once per process and never released: releasing it would
 * synchronize the device and break other threads' captures. {@link #close()} shuts down
 * Gatun's state instead (it frees everything queued for retirement, then the context's own
 * streams and pooled events), and refuses while owners made from it are still open.
 *
 * <p>Owners can be used from any thread, platform or virtual, by one rule: <b>every driver call
 * Gatun makes sets or checks the current context on the OS thread it runs on.</b> CUDA's current
 * context belongs to the OS thread, which for a virtual thread is its carrier of the moment. A
 * call that acts on the current context (creating, allocating, loading, freeing, destroying,
 * synchronizing the context, capturing) makes this one current itself, immediately before its
 * downcall, with nothing between the two that can park; one that names a stream or an event
 * (launches, graph launches, records, queries, waits, copies, memsets, stream-ordered allocations
 * and frees) acts in that handle's context whatever is current, or none. No operation makes the
 * context current for the calls after it.
 *
 * <p>What pins a virtual thread to its carrier is a downcall, for its duration only. Between two
 * downcalls it moves to another carrier whenever it parks: on a contended lock or monitor (a
 * stream's lock, the capture gate, the ordering and retirement locks, an executable's monitor),
 * on the gate's bounded wait while a global capture lasts, or on a future
 * ({@link Stream#onComplete()}, {@link Event#onComplete()}). Another context may be current on
 * the carrier it resumes on; the rule makes that harmless. The waits that happen in the driver
 * ({@link Stream#synchronize()}, {@link Event#synchronize()}, {@link #synchronize()}, the end of
 * a synchronous copy) do not park: they block the carrier for as long as they last, as any
 * downcall does, so on virtual threads a future is the wait that frees the carrier. A global or
 * thread-local stream capture belongs to the OS thread that began it, so a virtual thread may
 * only begin a relaxed one (see {@link CaptureMode}). runtime-core's README lists the waits and
 * gives each owner's thread-safety contract.
 *
 * <p>Safe points where closed handles are freed: allocations, owner creation and close,
 * synchronizations, and {@link #reap()}.
 *
 * <p>A <em>green</em> context ({@link #isGreen()}) is one group of a device's SMs
 * ({@link Device#partitionSms}): a context of its own ({@code cuCtxFromGreenCtx}), with its own
 * streams (made for it with {@code cuGreenCtxStreamCreate}, so its kernels, copies and graph
 * replays run on its SMs only), memory, events, modules, graphs and retirement queue, used like
 * the primary context. Its {@link #close()} drains it and then destroys the green context.
 */
public final class CudaContext implements AutoCloseable {

    private static final String SYNCHRONIZE = "cuCtxSynchronize";

    private final Device device;
    private final ContextState contextState;
    private final Stream computeStream;
    private final Stream copyStream;
    private final int leastPriority;
    private final int greatestPriority;
    private final StagingPool staging;
    private final SynchronousCopies copies;
    private final ModuleRegistry modules;
    private final ContextOptions options;
    private final DevicePool pool;
    private final Recyclers recyclers = new Recyclers();
    private final DevicePoolView devicePool;
    /** The CUDA memory pools not yet destroyed, for the out-of-memory ladder, the soft limits and reports. */
    private final PoolRegistry pools = new PoolRegistry();
    private final OutOfMemoryLadder ladder;
    private final SoftLimits softLimits;
    private final MemoryPressure memoryPressure;
    /** The context's view of the device's default memory pool (the driver is asked for the pool on first use). */
    private final MemoryPool defaultMemoryPool;
    /** The green context this context was made from ({@link Device#partitionSms}), or null for the primary context. */
    private final GreenContext green;

    /** A green context's handle, the calls that destroy it, and its SMs. */
    record GreenContext(MemorySegment handle, GreenContextCalls calls, int smCount) {
    }

    CudaContext(Device device, MemorySegment primary, ContextOptions options) {
        this(device, primary, null, options);
    }

    /**
     * @param handle the retained primary context, or the {@code CUcontext} of {@code green}
     * @param green the green context {@code handle} was made from, which this context destroys at
     *     close; null for the primary context
     */
    CudaContext(Device device, MemorySegment handle, GreenContext green, ContextOptions options) {
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
        this.memoryPressure = new MemoryPressure(this, ladder);
        applyCoredumps(device, options.coredumps());
        ContextCalls.StreamPriorities priorities = contextState.calls().context().streamPriorities();
        this.leastPriority = priorities.least();
        this.greatestPriority = priorities.greatest();
        this.staging = new StagingPool(contextState);
        this.copies = new SynchronousCopies(contextState, staging);
        this.computeStream = new Stream(this, 0, true);
        this.copyStream = new Stream(this, 0, true);
        contextState.openSyncStream();
        this.modules = new ModuleRegistry(this);
        this.defaultMemoryPool = MemoryPool.deviceDefault(this);
    }

    /**
     * Sets the primary context's GPU coredumps as {@code dumps} says, before any work of this
     * context can fault. The setting outlives this object (the primary context is never
     * released), so dumps an earlier context of the device turned on are turned off again when
     * this one wants none; a device whose dumps Gatun never turned on gets no driver call.
     */
    private void applyCoredumps(Device device, GpuCoredumps dumps) {
        if (dumps.enabled()) {
            contextState.calls().coredumps().requireSupport();
            device.coredumpsOn = true; // before turnOn: one that fails halfway may have turned them on
            contextState.calls().coredumps().turnOn(dumps.file(), dumps.lightweight());
        } else if (device.coredumpsOn) {
            contextState.calls().coredumps().turnOff();
            device.coredumpsOn = false;
        }
    }

    /** {@return the device this context belongs to} */
    public Device device() {
        return device;
    }

    /** {@return whether this is a green context: one group of SMs of a {@link SmPartition}} */
    public boolean isGreen() {
        return green != null;
    }

    /**
     * {@return the SMs this context's kernels run on: a green context's share of its device, as the
     * driver split it; the whole device's multiprocessor count for the primary context}
     */
    public int smCount() {
        return green != null ? green.smCount() : device.capabilities().multiprocessorCount();
    }

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

    /** The freed memory objects kept for the next allocations of their kinds. */
    Recyclers recyclers() {
        return recyclers;
    }

    /** What an allocation that ran out of memory climbs (from its catch block, with no stream's lock held). */
    OutOfMemoryLadder ladder() {
        return ladder;
    }

    /** The CUDA memory pools of this context not yet destroyed. */
    PoolRegistry pools() {
        return pools;
    }

    /** {@return the options this context was opened with} */
    public ContextOptions options() {
        return options;
    }

    /** {@return the device pool in front of {@link #allocate}: its counters, call-site profile and trim} */
    public DevicePoolView devicePool() {
        return devicePool;
    }

    /**
     * {@return memory pressure: what the out-of-memory ladder did ({@link MemoryPressure#counters()}) and
     * where this context's memory is now ({@link MemoryPressure#report()})}
     */
    public MemoryPressure memoryPressure() {
        return memoryPressure;
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

    /**
     * {@return the context's stream for copies, separate from {@link #computeStream()} so the two can
     * overlap} Like any stream it can be captured: Gatun's synchronous copies and frees run on a
     * stream of its own.
     */
    public Stream copyStream() {
        checkOpen();
        return copyStream;
    }

    /**
     * {@return a new empty graph, to build node by node ({@link Graph#addKernel}, {@link Graph#addMemset},
     * {@link Graph#addFill}, {@link Graph#addCopy}) and then {@linkplain Graph#instantiate()
     * instantiate}}
     */
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
     * @param priority lower numbers mean higher priority; the device allows
     *     {@link #greatestStreamPriority()} (highest) to {@link #leastStreamPriority()} (lowest),
     *     on Hopper -5 to 0
     */
    public Stream createStream(int priority) {
        checkOpen();
        if (priority < greatestPriority || priority > leastPriority) {
            throw new IllegalArgumentException("stream priority " + priority + " is outside this device's range "
                    + greatestPriority + " (highest) .. " + leastPriority + " (lowest); lower numbers mean higher priority");
        }
        contextState.reap();
        return new Stream(this, priority, false);
    }

    /** {@return the lowest priority a stream can have (the largest number; 0 on current GPUs)} */
    public int leastStreamPriority() {
        return leastPriority;
    }

    /** {@return the highest priority a stream can have (the smallest number, e.g. -5)} */
    public int greatestStreamPriority() {
        return greatestPriority;
    }

    /**
     * Wraps a stream another library created in this context (ONNX Runtime, cuBLAS, a native
     * engine) without taking it over. Gatun uses it like its own streams: its launches and
     * copies on it are fenced and tracked, buffers used on it are not freed before that work
     * completes, and every synchronous operation of this context orders after the work queued on
     * it, Gatun's or the other library's. Closing the returned stream ends Gatun's view once the
     * work queued before the close completed; Gatun never destroys it. The other library must
     * keep it alive until then.
     *
     * @param foreignStream a {@code CUstream} from {@code cuStreamCreate*} in this device's
     *     primary context (checked with {@code cuStreamGetCtx})
     * @return Gatun's view of the stream, to close when Gatun no longer uses it
     * @throws IllegalArgumentException for the NULL, legacy or per-thread default stream, or a
     *     stream of another context
     * @throws CudaException when the driver rejects the handle
     */
    public Stream borrowStream(MemorySegment foreignStream) {
        Objects.requireNonNull(foreignStream, "foreignStream");
        checkOpen();
        int priority = ForeignHandles.checkStream(contextState, foreignStream);
        contextState.reap();
        return Stream.borrow(this, foreignStream, priority);
    }

    /**
     * Wraps {@code bytes} of device memory another library allocated, without taking it over:
     * a buffer Gatun can copy to and from and pass to kernels like its own. Closing it ends
     * Gatun's view once Gatun's work queued on it completed; Gatun never frees it. The other
     * library must keep the allocation alive until then.
     *
     * @param address a {@code CUdeviceptr} inside an allocation of this device
     *     ({@code cuMemAlloc}, {@code cuMemAllocAsync}, a memory pool; checked with
     *     {@code cuPointerGetAttributes}: device memory, this context or device, and
     *     {@code [address, address + bytes)} inside the allocation's range)
     * @param bytes the length of the range, in bytes
     * @return Gatun's view of the memory, to close when Gatun no longer uses it
     * @throws IllegalArgumentException when the range is not device memory of this context, or
     *     runs past its allocation, or {@code bytes} is not positive
     */
    public DeviceBuffer borrowDeviceMemory(long address, long bytes) {
        checkOpen();
        ForeignHandles.checkDeviceMemory(contextState, address, bytes);
        contextState.reap();
        return DeviceBuffer.borrow(this, address, bytes);
    }

    /**
     * {@return a kernel of a module another library loaded in this context, without taking the module
     * over: it launches like any Gatun kernel (its launches are fenced), and closing it ends
     * Gatun's view once those launches completed; Gatun never unloads the module} The other
     * library must keep it loaded until then. The driver cannot tell which context a module
     * belongs to: a module of another context fails at launch with the driver's error.
     *
     * @param foreignModule a loaded {@code CUmodule}
     * @param function the function's (mangled) name, looked up with {@code cuModuleGetFunction}
     * @throws IllegalArgumentException when the module has no such function
     */
    public Kernel borrowKernel(MemorySegment foreignModule, String function) {
        Objects.requireNonNull(foreignModule, "foreignModule");
        Objects.requireNonNull(function, "function");
        checkOpen();
        if (foreignModule.address() == 0) {
            throw new IllegalArgumentException("cannot borrow a kernel from the NULL module");
        }
        MemorySegment f = contextState.calls().modules().function(foreignModule, function);
        if (f == null) {
            throw new IllegalArgumentException("module 0x" + Long.toHexString(foreignModule.address())
                    + " has no kernel '" + function + "' (cuModuleGetFunction: not found); C++ kernels need their "
                    + "mangled name, or extern \"C\"");
        }
        contextState.reap();
        return new Kernel(this, ModuleResource.borrow(contextState, foreignModule), f, function);
    }

    /**
     * Loads a kernel library ({@code cuLibraryLoadData}): code the driver loads once for every
     * context, whose kernels run on this context and on any other of the same {@link Cuda}, the
     * green contexts of {@link Device#partitionSms} included ({@link KernelLibrary#kernel(String, CudaContext)}).
     * Loading may synchronize the device, so it runs inside the capture gate.
     *
     * <p>The library is loaded into this context at once ({@code cuLibraryGetModule}), as a
     * module is: a driver that loads libraries lazily (the default since CUDA 12.2) would
     * otherwise compile the code only for its first kernel, and a bad image would fail there.
     *
     * @param image the library's code (PTX, CUBIN or fatbin, checked as {@link ModuleRegistry#load} checks it)
     * @return the loaded library, to close when done; this context's retirement queue unloads it
     * @throws ImageRejectedException when the driver rejects the image (e.g. {@code CUDA_ERROR_INVALID_PTX}),
     *     as {@link ModuleRegistry#load} reports it; nothing stays loaded
     * @throws CudaException when the load fails otherwise
     */
    public KernelLibrary loadLibrary(ModuleImage image) {
        Objects.requireNonNull(image, "image");
        checkOpen();
        contextState.reap();
        return KernelLibrary.load(this, image);
    }

    /**
     * {@return the raw {@code CUcontext}: this device's primary context (for a green context, the
     * context the driver made from it, valid until {@link #close()}), for interop with other CUDA
     * code} Gatun retains it once per process and never releases it, so it outlives this
     * object; the other code must not destroy it (it may retain and release it in pairs, as the
     * runtime API does).
     */
    public MemorySegment handle() {
        checkOpen();
        return contextState.handle();
    }

    /** {@return a fence event (timing disabled): the cheapest way to order and observe work} */
    public Event createEvent() {
        checkOpen();
        contextState.reap();
        return new Event(this, false);
    }

    /** {@return an event that records timestamps, for {@link Event#elapsedMillis(Event)}} */
    public Event createTimingEvent() {
        checkOpen();
        contextState.reap();
        return new Event(this, true);
    }

    /**
     * {@return a fence event that other processes can open ({@code CU_EVENT_INTERPROCESS}, timing
     * disabled): export it with {@link Event#exportForIpc()}}
     */
    public Event createInterprocessEvent() {
        checkOpen();
        contextState.reap();
        return Event.interprocess(this);
    }

    /**
     * Opens an interprocess event another process exported ({@link Event#exportForIpc()};
     * {@code cuIpcOpenEventHandle}): a fence event of this context that waits and queries see
     * the exporter's records through. Closing it destroys this process's handle only, after the
     * work queued here on it completed.
     *
     * @param handle the handle the exporting process sent
     * @return the imported event, to close when done
     * @throws CudaException e.g. {@code CUDA_ERROR_INVALID_VALUE} for a handle of no live event,
     *     or one exported by this very process
     */
    public Event importEvent(IpcEventHandle handle) {
        Objects.requireNonNull(handle, "handle");
        checkOpen();
        contextState.reap();
        return Event.importFrom(this, handle);
    }

    /**
     * Imports the memory pool another process exported as the POSIX file descriptor {@code fd}
     * ({@link MemoryPool#exportFileDescriptor()}; {@code cuMemPoolImportFromShareableHandle}),
     * a descriptor of this process (received over a Unix socket, or taken with
     * {@code pidfd_getfd}). The imported pool cannot allocate; import the exporter's allocations
     * with {@link MemoryPool#importAllocation}. Gatun does not close {@code fd}; close it once
     * imported. Closing the pool destroys this process's pool object once every allocation
     * imported from it was freed.
     *
     * @param fd the descriptor, owned by the caller
     * @return the imported pool, to close when done
     * @throws IllegalArgumentException when {@code fd} is negative
     * @throws CudaException e.g. {@code CUDA_ERROR_INVALID_VALUE} for a descriptor of no exported pool
     */
    public MemoryPool importMemoryPool(int fd) {
        if (fd < 0) {
            throw new IllegalArgumentException("file descriptor " + fd + " is negative; pass the descriptor this process "
                    + "received for the exporter's pool");
        }
        checkOpen();
        contextState.reap();
        return MemoryPool.importFrom(this, fd);
    }

    /**
     * Maps device memory another process exported ({@link DeviceBuffer#exportForIpc()};
     * {@code cuIpcOpenMemHandle} with {@code CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS}): a buffer of
     * {@link IpcMemoryHandle#byteSize()} bytes that this process reads and writes like its own.
     * It borrows the memory: closing it unmaps it ({@code cuIpcCloseMemHandle}) once the work
     * queued here on it completed, and never frees it; close it before the exporter closes the
     * original.
     *
     * @param handle the handle the exporting process sent
     * @return the mapped buffer, to close before the exporter closes the original
     * @throws CaptureActiveException when a global capture on this context stays active past the gate timeout
     * @throws CudaException e.g. {@code CUDA_ERROR_INVALID_VALUE} for a handle of no live
     *     allocation, or {@code CUDA_ERROR_INVALID_CONTEXT} for one exported by this very process
     */
    public DeviceBuffer importBuffer(IpcMemoryHandle handle) {
        Objects.requireNonNull(handle, "handle");
        checkOpen();
        contextState.reap();
        return DeviceBuffer.importFrom(this, handle);
    }

    /**
     * Allocates device memory ({@code cuMemAlloc}, through the context's size-classed pool: a
     * block whose last use has completed is reused without a driver call). Not initialized. A
     * request of 0 bytes gives a 0-byte buffer with no native allocation.
     *
     * @param bytes how many bytes to allocate; 0 or more
     * @return the new buffer, to close when done
     * @throws CaptureActiveException when a global capture on this context stays active past the gate timeout
     * @throws CudaException e.g. {@code CUDA_ERROR_OUT_OF_MEMORY}
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
     * A new CUDA memory pool on this device ({@code cuMemPoolCreate}; pinned device memory,
     * exportable to other processes when the options give an export handle), for stream-ordered allocation with {@link MemoryPool#allocate}. Close it when
     * done: it is destroyed once every allocation from it has been freed.
     *
     * @param options the pool's release threshold, reuse policies and export handle
     * @return the new pool, to close when done
     * @throws CudaException e.g. {@code CUDA_ERROR_NOT_SUPPORTED} on a device without memory pools
     */
    public MemoryPool createMemoryPool(MemoryPoolOptions options) {
        Objects.requireNonNull(options, "options");
        checkOpen();
        contextState.reap();
        return MemoryPool.create(this, options);
    }

    /**
     * {@return the device's default memory pool ({@code cuDeviceGetDefaultMemPool}), which
     * {@link Stream#allocate} allocates from unless other code set another current pool for the
     * device} It belongs to the driver: closing it does nothing, and its attributes are the
     * device's, shared with every other user of the device in this process. The view is one of
     * the context's own owners from its creation, like its two streams; the driver is asked for
     * the pool on its first use.
     */
    public MemoryPool defaultMemoryPool() {
        checkOpen();
        return defaultMemoryPool;
    }

    /**
     * A growable buffer that reserves {@code maxBytes} of device address space (rounded up to a
     * whole chunk), exactly: {@code reserveGrowable(GrowableBufferOptions.exactly(maxBytes))}.
     *
     * @param maxBytes the most the buffer may grow to, in bytes
     * @return the new buffer, with nothing mapped yet
     */
    public GrowableBuffer reserveGrowable(long maxBytes) {
        return reserveGrowable(GrowableBufferOptions.exactly(maxBytes));
    }

    /**
     * A growable buffer ({@link GrowableBuffer}): reserves device address space as {@code options}
     * say, with nothing mapped yet (size 0). Close it when done.
     *
     * @param options how much address space to reserve, and in which chunks
     * @return the new buffer, to close when done
     * @throws CudaException {@code CUDA_ERROR_NOT_SUPPORTED} on a device without virtual memory
     *     management; the driver's error when even the minimum reservation is refused
     */
    public GrowableBuffer reserveGrowable(GrowableBufferOptions options) {
        Objects.requireNonNull(options, "options");
        checkOpen();
        contextState.reap();
        return GrowableBuffer.reserve(this, options);
    }

    /**
     * Allocates page-locked host memory, not write-combined (host reads stay fast).
     *
     * @param bytes how many bytes to allocate
     * @return the new buffer, to close when done
     */
    public PinnedBuffer allocatePinned(long bytes) {
        return allocatePinned(bytes, false);
    }

    /**
     * Allocates page-locked host memory ({@code cuMemHostAlloc}, portable).
     *
     * @param writeCombined write-combined memory transfers faster to the device but is very slow
     *     for the host to read: ask for it only for upload-only buffers
     * @param bytes how many bytes to allocate
     * @return the new buffer, to close when done
     */
    public PinnedBuffer allocatePinned(long bytes, boolean writeCombined) {
        checkOpen();
        if (bytes < 0) {
            throw new IllegalArgumentException("cannot allocate a negative size: " + bytes);
        }
        contextState.reap();
        return PinnedBuffer.allocate(this, bytes, writeCombined);
    }

    /**
     * Allocates a {@link MappedWord}: 8 bytes of pinned host memory mapped into the device, set
     * to 0, that the GPU sets and the host polls without a driver call.
     *
     * @return the new word, to close when done
     */
    public MappedWord allocateMappedWord() {
        checkOpen();
        contextState.reap();
        return MappedWord.allocate(this);
    }

    /**
     * Lets this context's kernels and copies access {@code peer}'s device memory directly
     * ({@code cuCtxEnablePeerAccess}). Once per ordered pair, idempotent and thread-safe: a
     * second call, or a driver that reports it already enabled, is not an error.
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
     * {@return whether {@link #enablePeerAccess} has made {@code peer}'s memory accessible to this context}
     *
     * @param peer the other device's context
     */
    public boolean peerAccessEnabled(CudaContext peer) {
        return peer == this || contextState.peers().enabled(peer.contextState) && peer.device.cuda() == device.cuda();
    }

    /**
     * Waits for all work on the device from this context (inside the capture gate), then frees
     * what that completed and gives back the memory of pools idle above their soft limits.
     */
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

    /**
     * Frees what has been closed and whose GPU work is complete, without blocking; and gives back
     * the memory of pools idle above their soft limits ({@link DevicePoolOptions#softLimitBytes},
     * {@link MemoryPoolOptions#softLimitBytes}).
     */
    public void reap() {
        checkOpen();
        contextState.reap();
        softLimits.atSafePoint();
    }

    /** {@return free and total device memory} */
    public MemoryInfo memoryInfo() {
        checkOpen();
        return contextState.calls().memory().info();
    }

    /**
     * Owners of this kind made from this context and not yet closed.
     *
     * @param kind which kind of owner to count
     * @return how many owners of this kind are open
     */
    public long liveOwners(OwnerKind kind) {
        return contextState.live(kind);
    }

    /**
     * {@return the owners made from this context and not yet closed, oldest first, each with where it was
     * created: the context's own two streams, its view of the default memory pool and the modules its registry holds included, its
     * staging blocks ({@link OwnerKind#STAGING}, not owners anyone closes) not} A snapshot, for
     * tests that name what leaked; {@link #liveOwners(OwnerKind)} counts without leak tracking.
     *
     * @throws IllegalStateException when the context was opened without leak tracking
     *     ({@link ContextOptions#withLeakTracking}), which alone keeps this list
     */
    public List<LiveOwner> liveOwners() {
        return contextState.liveResources().stream()
                .map(r -> new LiveOwner(r.kind(), r.id(), r.identity(), List.of(r.allocationSite().getStackTrace()),
                        r.borrowed()))
                .toList();
    }

    /**
     * {@return how many exceptions the host callbacks of this context ({@link Graph#addHost},
     * {@link Stream#launchHostFunction}) have thrown} Each was also logged at ERROR when it was thrown.
     */
    public long hostCallbackFailureCount() {
        return contextState.hostCallbackFailures().count();
    }

    /**
     * {@return the exceptions host callbacks of this context threw since the last call, oldest first (the
     * first 16; later ones are counted and logged only)}, and forgets them. A callback runs on the
     * driver's thread, long after the graph launch or stream call that queued it returned, so this
     * is where what it threw surfaces; the work after it ran as usual.
     */
    public List<Throwable> takeHostCallbackFailures() {
        return contextState.hostCallbackFailures().take();
    }

    /**
     * {@return how many futures from {@link Stream#onComplete}, {@link Event#onComplete} and {@link Fence#onComplete}
     * on this context still waiting for their host function: not yet completed, cancelled or
     * failed} Zero once the work they wait for is done and the dispatcher has handed them to
     * their executors.
     */
    public long pendingCompletions() {
        return Completions.pending(contextState);
    }

    /**
     * {@return how many watch streams the context has: its own streams, made on the first {@link Event#onComplete}
     * or {@link Fence#onComplete} while the others are busy, at most eight, destroyed when it
     * closes (zero from then on)} Not owners: {@link #liveOwners()} does not list them.
     */
    public int watchStreams() {
        return contextState.watches().count();
    }

    /** {@return a snapshot of the counters} */
    public ContextCounters counters() {
        return contextState.stats().snapshot(contextState.retirement().pending());
    }

    /** {@return a snapshot of Gatun's counts of graph allocations (see {@link Stream#allocate} inside a capture)} */
    public GraphAllocationCounters graphAllocations() {
        ContextStats stats = contextState.stats();
        return new GraphAllocationCounters(stats.graphAllocations.sum(), stats.graphAllocationsLive.sum(),
                stats.graphAllocationBytesLive.sum());
    }

    /**
     * {@return the device's graph memory, used and reserved, current and high-water, as the driver counts
     * it ({@code cuDeviceGetGraphMemAttribute}, four calls)}
     */
    public GraphMemoryUsage graphMemoryUsage() {
        checkOpen();
        GraphMemoryCalls calls = contextState.calls().graphMemory();
        return new GraphMemoryUsage(calls.attribute(GraphMemoryCalls.USED_CURRENT),
                calls.attribute(GraphMemoryCalls.USED_HIGH), calls.attribute(GraphMemoryCalls.RESERVED_CURRENT),
                calls.attribute(GraphMemoryCalls.RESERVED_HIGH));
    }

    /**
     * Returns the device's graph memory that no graph uses to the OS ({@code cuDeviceGraphMemTrim}).
     * Memory of a graph that runs or is queued to run, and of allocations a launch left
     * allocated (a graph's {@linkplain Graph#allocations() allocations}, until Gatun frees them
     * after their graph and executable are gone), stays reserved.
     */
    public void trimGraphMemory() {
        checkOpen();
        contextState.calls().graphMemory().trim();
    }

    /** Resets both high-water marks of the device's graph memory to their current values ({@code cuDeviceSetGraphMemAttribute}). */
    public void resetGraphMemoryHighWater() {
        checkOpen();
        GraphMemoryCalls calls = contextState.calls().graphMemory();
        calls.resetHighWater(GraphMemoryCalls.USED_HIGH);
        calls.resetHighWater(GraphMemoryCalls.RESERVED_HIGH);
    }

    /** {@return how long a synchronizing call waits for another thread's global capture before failing} */
    public Duration gateTimeout() {
        return contextState.gate().bound();
    }

    /**
     * Sets how long a synchronizing call waits for another thread's global capture before failing with
     * {@link CaptureActiveException}.
     *
     * @param timeout the new bound; zero fails at once
     * @throws IllegalArgumentException when {@code timeout} is negative
     */
    public void setGateTimeout(Duration timeout) {
        contextState.gate().setBound(timeout);
    }

    /** {@return the sticky error that poisoned this context, if any} */
    public Optional<CudaException> poisonedBy() {
        return Optional.ofNullable(contextState.poison());
    }

    /** {@return whether this context has been closed} */
    public boolean isClosed() {
        return contextState.isClosed();
    }

    void checkOpen() {
        contextState.checkOpen();
    }

    /** Throws {@link IllegalArgumentException} unless {@code other} is this context. */
    void checkSame(CudaContext other, Object what) {
        // what: a constant, or an owner whose toString names it, built only for the refusal
        // (a hot path passes its resource, never a string it built).
        if (other != this) {
            throw new IllegalArgumentException(what + " belongs to " + other.name() + "'s context, but is used with "
                    + name() + "'s; use owners of one context together (a peer copy moves data between devices; a "
                    + "KernelLibrary gives a kernel for each context)");
        }
    }

    /** The device, and for a green context which one, for messages. */
    private String name() {
        return "device " + device.ordinal() + (green == null ? "" : " (green context 0x"
                + Long.toHexString(green.handle().address()) + ", " + green.smCount() + " SMs)");
    }

    /** Throws {@link IllegalArgumentException} unless {@code other} comes from the same driver instance. */
    void checkSameDriver(CudaContext other, String what) {
        if (other.device.cuda() != device.cuda()) {
            throw new IllegalArgumentException(what + " belongs to another Cuda instance; use owners of one Cuda "
                    + "(Cuda.system()) together");
        }
    }

    /**
     * Shuts down Gatun's state for this context: synchronizes the device, frees everything
     * waiting for retirement, and destroys the context's own streams, staging memory and
     * pooled events. The primary context itself stays retained.
     *
     * @throws IllegalStateException when owners made from this context are still open
     *     (nothing is changed then); close them first
     */
    @Override
    public synchronized void close() {
        if (contextState.isClosed()) {
            return;
        }
        StringBuilder open = new StringBuilder();
        for (OwnerKind kind : OwnerKind.values()) {
            // The context's own: its two streams, its view of the default memory pool, its staging
            // blocks, and the modules its registry holds, all of which this close retires itself.
            long own = switch (kind) {
                case STREAM -> 2;
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
            // After the drain, which ran every host function of a healthy context; if it failed,
            // the futures still pending are failed rather than left waiting.
            Completions.contextClosed(contextState);
        }
        device.contextClosed(this);
        if (green != null) {
            // Drained above: none of its streams, events or memory is left (a poisoned context's
            // abandoned ones die with it); the driver releases the primary context it retained.
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
