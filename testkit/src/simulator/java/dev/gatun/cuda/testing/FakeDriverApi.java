package dev.gatun.cuda.testing;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.driver.DriverApi;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * A simulated CUDA device for CPU tests of Gatun's owners: its state, the controls a test
 * drives it with, and {@link #api()}, the {@link DriverApi} Gatun runs on.
 *
 * <p>Device memory is backed by host memory at fake device addresses; streams are queues of
 * operations that run at once unless the test {@linkplain #hold holds} the stream (the GPU is
 * "busy"); events complete when the work before them ran; a host wait finishes only the work it
 * waits for, as the real driver does (a stream synchronize that stream's queue and what it waits
 * on, not every stream). Frees are checked against queued work: freeing memory
 * that a queued operation still uses is recorded as a {@linkplain #violations() violation}
 * instead of corrupting anything, so a test can prove Gatun never does it.
 *
 * <p>The driver functions are simulated by area, one class each: {@link SimulatedDevices},
 * {@link SimulatedCurrentContexts} (the current context of each carrier thread, and the refusal of
 * a call made under the wrong one),
 * {@link SimulatedStreams}, {@link SimulatedMemory}, {@link SimulatedMemoryPools}, {@link SimulatedIpc},
 * {@link SimulatedVirtualMemory}, {@link SimulatedModules} and
 * {@link SimulatedCaptureAndGraphs} with {@link SimulatedConditionals}, {@link SimulatedCaptureGraphs} and
 * {@link SimulatedGraphMemory}, and
 * {@link SimulatedLogs} (the error log), {@link SimulatedMemOps} (stream memory operations),
 * {@link SimulatedGreenContexts} (green contexts and kernel libraries), {@link SimulatedBatchCopies} and
 * {@link SimulatedCoredumps}; {@link SimulatedDriverApi} hands each call to its area. A
 * function no test needs is not simulated (see SimulatedDriverCoverageTest). Every driver call
 * and every control holds this object's lock.
 */
public final class FakeDriverApi {

    public static final int SUCCESS = 0;
    public static final int INVALID_VALUE = CudaDriver.CUDA_ERROR_INVALID_VALUE();
    public static final int NOT_READY = CudaDriver.CUDA_ERROR_NOT_READY();
    public static final int INVALID_HANDLE = CudaDriver.CUDA_ERROR_INVALID_HANDLE();
    public static final int OUT_OF_MEMORY = CudaDriver.CUDA_ERROR_OUT_OF_MEMORY();

    // ---- state every area shares ----
    /** Memory the simulated driver hands out for as long as it lives (error strings, node parameters). */
    final Arena arena = Arena.ofShared();
    final List<String> violations = new ArrayList<>();
    private long nextHandle = 0x1000;

    final SimulatedDevices devices = new SimulatedDevices(this);
    final SimulatedCurrentContexts contexts = new SimulatedCurrentContexts(this);
    final SimulatedStreams streams = new SimulatedStreams(this);
    final SimulatedMemory memory = new SimulatedMemory(this);
    final SimulatedMemoryPools pools = new SimulatedMemoryPools(this);
    final SimulatedVirtualMemory virtualMemory = new SimulatedVirtualMemory(this);
    final SimulatedIpc ipc = new SimulatedIpc(this);
    final SimulatedModules modules = new SimulatedModules(this);
    final SimulatedCaptureAndGraphs graphs = new SimulatedCaptureAndGraphs(this);
    final SimulatedConditionals conditionals = new SimulatedConditionals(this);
    final SimulatedCaptureGraphs captureGraphs = new SimulatedCaptureGraphs(this);
    final SimulatedGraphMemory graphMemory = new SimulatedGraphMemory(this);
    final SimulatedLogs logs = new SimulatedLogs(this);
    final SimulatedMemOps memOps = new SimulatedMemOps(this);
    final SimulatedGreenContexts green = new SimulatedGreenContexts(this);
    final SimulatedBatchCopies batchCopies = new SimulatedBatchCopies(this);
    final SimulatedCoredumps coredumps = new SimulatedCoredumps(this);
    private final SimulatedHostCalls hostCalls = new SimulatedHostCalls(this);
    private final DriverApi api = SimulatedDriverApi.over(this, areas(), new SimulatedDriverApi.Hook() {
        @Override
        public void binds(String function) {
            devices.bind(function);
        }

        @Override
        public int begins(Thread carrier, String function, Object[] args) {
            hostCalls.check(function, args);
            logs.calling(function);
            return contexts.begins(carrier, function, args);
        }

        @Override
        public void ends(String function, Object[] args, Object result) {
            contexts.ends(function, args, result);
        }
    });

    /** The driver functions' simulations, one object per area. */
    List<Object> areas() {
        return List.of(devices, contexts, streams, memory, pools, ipc, virtualMemory, modules, graphs, conditionals, graphMemory,
                logs, memOps, green, batchCopies, coredumps, captureGraphs);
    }

    /** A fresh handle for a stream, event, module, function, graph, executable or node. */
    long newHandle() {
        return nextHandle += 16;
    }

    /** The simulated driver, for {@code Driver.create} or {@link FaultInjection#around}. */
    public DriverApi api() {
        return api;
    }

    // ---- devices ----

    public synchronized FakeDriverApi initResult(int result) {
        devices.initResult = result;
        return this;
    }

    public synchronized FakeDriverApi deviceCount(int count) {
        devices.deviceCount = count;
        return this;
    }

    /** Sets what cuDeviceGetAttribute reports for a CU_DEVICE_ATTRIBUTE_* value. */
    public synchronized FakeDriverApi attribute(int attribute, int value) {
        devices.attributes.put(attribute, value);
        return this;
    }

    /** Makes cuDeviceGetAttribute fail for this attribute. */
    public synchronized FakeDriverApi failAttribute(int attribute) {
        devices.failingAttributes.add(attribute);
        return this;
    }

    /**
     * The driver reports CUDA {@code encoded} (1000 * major + 10 * minor): it has the entry points
     * no newer than that, and every other fails its first call with DriverTooOldException.
     */
    public synchronized FakeDriverApi version(int encoded) {
        devices.version = encoded;
        return this;
    }

    /** The driver lacks the entry point of {@code name} (a function of DriverApi), whatever its version. */
    public synchronized FakeDriverApi withoutSymbol(String name) {
        devices.missingSymbols.add(name);
        return this;
    }

    /** How many {@code cuMemcpyBatchAsync} calls were made (each counts once, whatever its result). */
    public synchronized int batchCopyCalls() {
        return batchCopies.batchCalls;
    }

    /** How many {@code cuMemcpyAsync} calls were made (the one-at-a-time path of a batch). */
    public synchronized int singleCopyCalls() {
        return batchCopies.singleCalls;
    }

    /** The context current on {@code carrier} (the OS thread: a virtual thread's carrier, see {@link Carriers}), or NULL. */
    public synchronized MemorySegment currentContextOn(Thread carrier) {
        return MemorySegment.ofAddress(contexts.currentOn(carrier));
    }

    /**
     * The calls refused with {@code CUDA_ERROR_INVALID_CONTEXT} because no context, or another
     * than the one their handle belongs to, was current on their carrier: each one's function and
     * why. Empty when every call that acts on the current context had its own current.
     */
    public synchronized List<String> contextRefusals() {
        return List.copyOf(contexts.refusals);
    }

    /** How many times a primary context was retained (Gatun retains once per device). */
    public synchronized int primaryContextRetains() {
        return devices.retainedContexts;
    }

    // ---- the error log ----

    /**
     * The driver logs {@code line} at {@code level} ({@code CU_LOG_LEVEL_*}) on the calling thread,
     * outside any call Gatun makes (as for a call made through another binding): every registered
     * callback gets it.
     */
    public synchronized void driverLogs(int level, String line) {
        logs.log(level, line);
    }

    /**
     * The next call of {@code function} on the calling thread logs {@code line} at {@code level}
     * inside the call, whatever it returns (the real driver logs in some calls that succeed).
     */
    public synchronized void driverLogsDuringNext(String function, int level, String line) {
        logs.logDuringNext(function, level, line);
    }

    /** Callbacks registered with {@code cuLogsRegisterCallback}. */
    public synchronized int logCallbacks() {
        return logs.callbacks();
    }

    // ---- GPU coredump settings ----

    /** A context's coredump setting ({@code CU_COREDUMP_*}): a Boolean, the Integer flags or the String file. */
    public synchronized Object coredumpSetting(MemorySegment context, int attribute) {
        return coredumps.setting(context.address(), attribute);
    }

    /** The driver read {@code value} for a coredump setting from an environment variable: it takes precedence over every set. */
    public synchronized FakeDriverApi coredumpEnvironment(int attribute, Object value) {
        coredumps.environment.put(attribute, value);
        return this;
    }

    // ---- graphs ----

    /** How many programmatic edges were added by hand, and with which port ({@code CU_GRAPH_KERNEL_NODE_PORT_*}): each entry {producer node position, consumer node position, port}. */
    public synchronized List<int[]> programmaticEdges() {
        return List.copyOf(graphs.programmaticEdges);
    }

    // ---- streams and events ----

    /** The GPU is busy on this stream: its work waits until {@link #release}, or a host wait for it (a synchronize of it, of its context, or of an event recorded after it). */
    public synchronized void hold(MemorySegment stream) {
        streams.streamOf(stream.address()).held = true;
    }

    /** The GPU is busy on every stream that exists now: each one's work waits until a host wait for it (or {@link #release}). */
    public synchronized void holdAll() {
        for (SimulatedStreams.Stream s : streams.all()) {
            s.held = true;
        }
    }

    /** The GPU finishes the held work on this stream (and whatever waited on it). */
    public synchronized void release(MemorySegment stream) {
        streams.streamOf(stream.address()).held = false;
        streams.pump();
    }

    /** The GPU runs the next {@code operations} queued on this stream, even while it is held (a kernel finished, the next not yet). */
    public synchronized void advance(MemorySegment stream, int operations) {
        streams.advance(streams.streamOf(stream.address()), operations);
    }

    /** Whether the last record of this event went into a stream capture (it is a graph node, not work that runs). */
    public synchronized boolean lastRecordCaptured(MemorySegment event) {
        SimulatedStreams.Event e = streams.events.get(event.address());
        if (e == null) {
            throw new IllegalArgumentException("no simulated event 0x" + Long.toHexString(event.address()));
        }
        return e.lastRecordCaptured;
    }

    public synchronized int liveStreams() {
        return streams.all().size();
    }

    public synchronized int liveEvents() {
        return streams.events.size();
    }

    /** Whether the event with this handle has not been destroyed. */
    public synchronized boolean eventAlive(MemorySegment event) {
        return streams.events.containsKey(event.address());
    }

    /** Host functions queued with cuLaunchHostFunc so far. */
    public synchronized long hostFunctionsQueued() {
        return streams.hostFunctionsQueued;
    }

    /**
     * The host waits made so far ({@code cuStreamSynchronize}, {@code cuEventSynchronize},
     * {@code cuCtxSynchronize}) that found work they wait for not yet run, by function, in order:
     * where a real host would have blocked while the GPU worked. A wait for work that already ran
     * returns at once and is not listed.
     */
    public synchronized List<String> blockingHostWaits() {
        return List.copyOf(streams.blockingWaits);
    }

    public synchronized int queuedOperations(MemorySegment stream) {
        return streams.streamOf(stream.address()).queue.size();
    }

    // ---- another library's handles, made and destroyed outside Gatun (no fault plan sees these calls) ----

    /** A context another library created on {@code device} (cuCtxCreate): not the primary context. */
    public synchronized MemorySegment foreignContext(int device) {
        return MemorySegment.ofAddress(devices.createForeignContext(device));
    }

    /** Device {@code device}'s primary context handle, as another library that retained it sees it. */
    public synchronized MemorySegment primaryContext(int device) {
        return MemorySegment.ofAddress(0xC0_0000L + device);
    }

    /** A stream another library created in {@code context}. */
    public synchronized MemorySegment foreignStream(MemorySegment context) {
        return MemorySegment.ofAddress(streams.create(0, context.address()));
    }

    /** Destroys a stream as its creator would; the driver's result. */
    public synchronized int destroyForeignStream(MemorySegment stream) {
        return streams.cuStreamDestroy_v2(stream);
    }

    /** {@code bytes} of device memory another library allocated in {@code context}; its address. */
    public synchronized long foreignDeviceMemory(MemorySegment context, long bytes) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(8);
            int r = memory.allocateDevice(out, bytes, context.address(), devices.deviceOf(context.address()));
            if (r != SUCCESS) {
                throw new IllegalStateException("the simulated driver refused the foreign allocation: " + r);
            }
            return out.get(ValueLayout.JAVA_LONG, 0);
        }
    }

    /** Frees device memory as its allocator would; the driver's result. */
    public synchronized int freeForeignDeviceMemory(long address) {
        return memory.cuMemFree_v2(address);
    }

    /** A module another library loaded from {@code ptx}; its handle. */
    public synchronized MemorySegment foreignModule(String ptx) {
        try (Arena a = Arena.ofConfined()) {
            MemorySegment out = a.allocate(8);
            int r = modules.cuModuleLoadData(out, a.allocateFrom(ptx));
            if (r != SUCCESS) {
                throw new IllegalStateException("the simulated driver refused the foreign module: " + r);
            }
            return MemorySegment.ofAddress(out.get(ValueLayout.JAVA_LONG, 0));
        }
    }

    /** Unloads a module as its loader would; the driver's result. */
    public synchronized int unloadForeignModule(MemorySegment module) {
        return modules.cuModuleUnload(module);
    }

    // ---- memory ----

    /** Device allocations beyond this many bytes fail with CUDA_ERROR_OUT_OF_MEMORY. */
    public synchronized FakeDriverApi memoryLimit(long bytes) {
        memory.memoryLimit = bytes;
        return this;
    }

    /** Device allocations live now: not IPC mappings, and graph allocations only while allocated (see {@link #backedGraphAllocations}). */
    public synchronized int liveDeviceAllocations() {
        return memory.device.size() - memory.mappings() - graphMemory.unbacked();
    }

    public synchronized long liveDeviceBytes() {
        return memory.deviceBytes;
    }

    public synchronized int liveHostAllocations() {
        return memory.host.size();
    }

    /** Reads device memory directly (as a debugger would), for assertions. */
    public synchronized byte[] deviceBytes(long address, int length) {
        MemorySegment m = memory.resolve(address, length);
        if (m == null) {
            throw new IllegalArgumentException("no device memory at 0x" + Long.toHexString(address) + "+" + length);
        }
        return m.toArray(ValueLayout.JAVA_BYTE);
    }

    /** Whether {@code address} is the base of an allocation node's allocation (a graph allocation), not of ordinary memory. */
    public synchronized boolean isGraphAllocation(long address) {
        SimulatedMemory.Allocation a = memory.device.get(address);
        if (a == null) {
            throw new IllegalArgumentException("no simulated device allocation at 0x" + Long.toHexString(address));
        }
        return a.graph;
    }

    /** IPC mappings (cuIpcOpenMemHandle) not yet closed. */
    public synchronized int liveIpcMappings() {
        return memory.mappings();
    }

    // ---- memory pools ----

    /** Pools made with cuMemPoolCreate and not destroyed (default pools are not counted). */
    public synchronized int liveMemoryPools() {
        return pools.created();
    }

    /** Allocations from pools (created or default) not yet freed. */
    public synchronized int livePoolAllocations() {
        return pools.liveAllocations();
    }

    // ---- virtual memory ----

    /** The minimum and recommended allocation granularity cuMemGetAllocationGranularity reports (default 2 MiB each). */
    public synchronized FakeDriverApi granularity(long minimum, long recommended) {
        virtualMemory.minimumGranularity = minimum;
        virtualMemory.recommendedGranularity = recommended;
        return this;
    }

    /** Address space beyond this many reserved bytes in all is refused with CUDA_ERROR_OUT_OF_MEMORY. */
    public synchronized FakeDriverApi addressSpaceLimit(long bytes) {
        virtualMemory.addressSpaceLimit = bytes;
        return this;
    }

    /** Address ranges reserved (cuMemAddressReserve) and not freed. */
    public synchronized int liveReservations() {
        return virtualMemory.liveReservations();
    }

    /** Physical allocations (cuMemCreate) not yet gone: released and unmapped. */
    public synchronized int livePhysicalAllocations() {
        return virtualMemory.livePhysical();
    }

    /** Mappings (cuMemMap) not unmapped. */
    public synchronized int liveMappings() {
        return virtualMemory.liveMappings();
    }

    // ---- modules and launches ----

    /** What launches of kernel {@code name} do when their stream runs them (default: nothing). */
    public synchronized FakeDriverApi kernelBody(String name, FakeKernel body) {
        modules.bodies.put(name, body);
        return this;
    }

    /** Static shared memory that kernel {@code name} reports (default 0). */
    public synchronized FakeDriverApi staticSharedMemory(String name, int bytes) {
        modules.staticShared.put(name, bytes);
        return this;
    }

    /**
     * Registers per thread that kernel {@code name} reports (default 32); its thread limit per
     * block follows, as the driver derives it: a multiprocessor's 65,536 registers shared by whole
     * warps of 32 threads, at most 1,024.
     */
    public synchronized FakeDriverApi registersPerThread(String name, int registers) {
        modules.registers.put(name, registers);
        return this;
    }

    /** Rejects every PTX image with CUDA_ERROR_UNSUPPORTED_PTX_VERSION (a driver older than the compiler). */
    public synchronized FakeDriverApi rejectPtx(boolean reject) {
        modules.rejectPtx = reject;
        return this;
    }

    /** Makes every module claim to have any function asked for (with no parameters). */
    public synchronized FakeDriverApi anyFunction(boolean any) {
        modules.anyFunction = any;
        return this;
    }

    /** The function names cuModuleGetFunction was asked for, in order. */
    public synchronized List<String> functionLookups() {
        return List.copyOf(modules.functionLookups);
    }

    public synchronized int liveModules() {
        return modules.modules.size();
    }

    /** Launches accepted so far (all kinds). */
    public synchronized int launches() {
        return modules.launches;
    }

    /**
     * One entry of a {@code cuLaunchKernelEx} attribute array: its {@code CUlaunchAttributeID}
     * and value (x, y, z for a cluster dimension; flags and triggerAtBlockStart for a
     * programmatic event, flags for a launch completion event, each with its event's handle in
     * {@code event}; the one int of every other attribute).
     *
     * @param event the event handle of an event attribute, 0 for any other
     */
    public record LaunchAttribute(int id, List<Integer> values, long event) {

        /** An attribute that names no event. */
        public LaunchAttribute(int id, List<Integer> values) {
            this(id, values, 0);
        }
    }

    /** The attribute arrays of the accepted {@code cuLaunchKernelEx} calls, in launch order. */
    public synchronized List<List<LaunchAttribute>> extendedLaunches() {
        return List.copyOf(modules.extendedLaunches);
    }

    // ---- capture and graphs ----

    /** Marks a stream as capturing (as if someone began a capture on it), or not. */
    public synchronized void capturing(MemorySegment stream, boolean capturing) {
        streams.streamOf(stream.address()).captureStatus = capturing ? CudaDriver.CU_STREAM_CAPTURE_STATUS_ACTIVE()
                : CudaDriver.CU_STREAM_CAPTURE_STATUS_NONE();
    }

    /**
     * Invalidates the capture open on this stream, as a call the driver forbids during a capture
     * would: ending it then ends it without a graph and reports CUDA_ERROR_STREAM_CAPTURE_INVALIDATED.
     */
    public synchronized void invalidateCapture(MemorySegment stream) {
        SimulatedStreams.Stream s = streams.streamOf(stream.address());
        if (s.captured == null) {
            throw new IllegalStateException("no capture is open on stream 0x" + Long.toHexString(stream.address()));
        }
        s.captureStatus = CudaDriver.CU_STREAM_CAPTURE_STATUS_INVALIDATED();
    }

    /** Live graphs (bodies included), not counting the new graph of a capture in progress, which the capture owns. */
    public synchronized int liveGraphs() {
        return graphs.graphs.size() - captureGraphs.newGraphsInProgress();
    }

    public synchronized int liveGraphExecs() {
        return graphs.execs.size();
    }

    public synchronized int graphLaunches() {
        return graphs.graphLaunches;
    }

    /**
     * Device memory that nodes of live graphs or executables name but that no longer exists: a
     * graph holds a buffer Gatun freed. Empty while every captured address is held.
     */
    public synchronized List<String> danglingGraphUses() {
        return graphs.danglingUses();
    }

    // ---- host calls in progress (reported by an Interposer in front of this driver) ----

    /**
     * The calling thread has entered driver function {@code function} with {@code args}, in front of
     * this driver: until {@link #hostCallEnds}, the call is in progress, and another thread's call
     * that the driver forbids to overlap it is a violation (see {@link SimulatedHostCalls}).
     */
    public synchronized void hostCallBegins(String function, Object[] args) {
        hostCalls.begins(function, args);
    }

    /** The calling thread has left the call reported by {@link #hostCallBegins}. */
    public synchronized void hostCallEnds(String function, Object[] args) {
        hostCalls.ends(function, args);
    }

    // ---- misuse ----

    /** Frees (or other misuse) that would have been unsafe on a real GPU. Empty in a correct run. */
    /** Graph allocations allocated on the simulated GPU now (between an allocation node and a free, as the GPU runs). */
    public synchronized int backedGraphAllocations() {
        return graphMemory.backed();
    }

    public synchronized List<String> violations() {
        return List.copyOf(violations);
    }

    // ---- green contexts and kernel libraries ----

    /** Green contexts created and not yet destroyed. */
    public synchronized int liveGreenContexts() {
        return green.live();
    }

    /** Whether {@code stream} was made for a green context ({@code cuGreenCtxStreamCreate}). */
    public synchronized boolean isGreenStream(MemorySegment stream) {
        return green.greenStreams.contains(stream.address());
    }

    /** The SMs of the green context whose {@code CUcontext} is {@code context}; 0 for any other context. */
    public synchronized int greenSmCount(MemorySegment context) {
        return green.smCountOf(context.address());
    }

    /** Kernel libraries loaded and not yet unloaded (each a context loaded also counts in {@link #liveModules()}). */
    public synchronized int liveLibraries() {
        return green.liveLibraries();
    }

    /** Of the live kernel libraries, those a context has loaded (their code compiled), not only kept. */
    public synchronized int librariesLoadedIntoContexts() {
        return green.loadedLibraries();
    }

    /**
     * Loads kernel libraries at {@code cuLibraryLoadData}, as the driver does with
     * {@code CUDA_MODULE_DATA_LOADING=EAGER}; by default they load lazily, when a context first
     * needs them, as drivers since CUDA 12.2 do.
     */
    public synchronized FakeDriverApi eagerLibraryLoading(boolean eager) {
        green.eager = eager;
        return this;
    }
}
