package dev.gatun.cuda.faults;

import static dev.gatun.cuda.faults.Outcome.fails;
import static dev.gatun.cuda.faults.Outcome.poisoned;
import static dev.gatun.cuda.faults.Outcome.recovers;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CaptureArena;
import dev.gatun.cuda.KernelAttribute;
import dev.gatun.cuda.DeviceAttribute;
import dev.gatun.cuda.CaptureInvalidatedException;
import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.ConditionalHandle;
import dev.gatun.cuda.ContextOptions;
import dev.gatun.cuda.CopyBatch;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.DriverTooOldException;
import dev.gatun.cuda.Event;
import dev.gatun.cuda.GpuCoredumps;
import dev.gatun.cuda.Graph;
import dev.gatun.cuda.GraphExec;
import dev.gatun.cuda.GraphNode;
import dev.gatun.cuda.GrowableBuffer;
import dev.gatun.cuda.ImageRejectedException;
import dev.gatun.cuda.IpcBufferExport;
import dev.gatun.cuda.IpcEventHandle;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.KernelLaunch;
import dev.gatun.cuda.KernelLibrary;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.LaunchRefusedException;
import dev.gatun.cuda.MappedWord;
import dev.gatun.cuda.MemOp;
import dev.gatun.cuda.MemoryAccess;
import dev.gatun.cuda.MemoryPool;
import dev.gatun.cuda.OutOfDeviceMemoryException;
import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.PinnedBuffer;
import dev.gatun.cuda.SmPartition;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.StreamCapture;
import dev.gatun.cuda.TransferState;
import dev.gatun.cuda.UpdatingExecutable;
import dev.gatun.cuda.WaitCondition;
import dev.gatun.cuda.WaitFlag;
import dev.gatun.cuda.WriteFlag;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.faults.FaultCase.Scenario;
import dev.gatun.cuda.faults.FaultWorld.Native;
import dev.gatun.cuda.internal.context.RetirementQueue;
import dev.gatun.cuda.testing.FakeCuda;
import dev.gatun.cuda.testing.FaultPlan;
import dev.gatun.cuda.testing.LogCapture;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.function.Executable;
import org.slf4j.event.Level;

/**
 * The fault table: for every driver function Gatun calls, a scenario on the public API that
 * makes the call, a representative error, and what must follow when the call fails before it is
 * made and after it (the uncertain case). {@link FaultCoverageTest} runs every row and fails the
 * build when a function in driver.functions has no row (or is not named in {@link #NOT_CALLED}).
 */
final class FaultTable {

    private static final int OUT_OF_MEMORY = CudaDriver.CUDA_ERROR_OUT_OF_MEMORY();
    private static final int INVALID_VALUE = CudaDriver.CUDA_ERROR_INVALID_VALUE();
    private static final int INVALID_HANDLE = CudaDriver.CUDA_ERROR_INVALID_HANDLE();
    private static final int INVALID_DEVICE = CudaDriver.CUDA_ERROR_INVALID_DEVICE();
    private static final int INVALID_CONTEXT = CudaDriver.CUDA_ERROR_INVALID_CONTEXT();
    private static final int INVALID_IMAGE = CudaDriver.CUDA_ERROR_INVALID_IMAGE();
    private static final int NO_DEVICE = CudaDriver.CUDA_ERROR_NO_DEVICE();
    private static final int NOT_READY = CudaDriver.CUDA_ERROR_NOT_READY();
    private static final int ILLEGAL_ADDRESS = CudaDriver.CUDA_ERROR_ILLEGAL_ADDRESS();
    private static final int ILLEGAL_STATE = CudaDriver.CUDA_ERROR_ILLEGAL_STATE();
    private static final int TOO_MANY_PEERS = CudaDriver.CUDA_ERROR_TOO_MANY_PEERS();
    private static final int CAPTURE_INVALIDATED = CudaDriver.CUDA_ERROR_STREAM_CAPTURE_INVALIDATED();
    private static final int CLOCK_RATE = CudaDriver.CU_DEVICE_ATTRIBUTE_CLOCK_RATE();
    private static final long MiB = 1 << 20;

    /** The world's options with lightweight GPU coredumps on (no fault here writes one). */
    private static final ContextOptions WITH_DUMPS = FaultWorld.OPTIONS.withCoredumps(
            GpuCoredumps.into(Path.of(System.getProperty("java.io.tmpdir"))));

    /** How an allocation that ran out of memory once recovers. */
    private static final String LADDER_RETRIES = "the out-of-memory ladder climbs to its synchronize and tries once more, "
            + "which succeeds";

    /**
     * Functions in driver.functions that nothing in runtime-core calls (no call site in layer 2,
     * which FaultCoverageTest checks): they cannot fail, so they have no row. Each is a candidate
     * for removal from driver.functions.
     */
    static final Set<String> NOT_CALLED = Set.of(); // Gatun's capture gate replaces per-thread capture modes

    static final List<FaultCase> CASES = List.of(
            // ---- Initialization, version and error strings ----
            call("cuInit", "a new Cuda over the driver", NO_DEVICE,
                    w -> () -> FakeCuda.over(w.sim.gpu, w.sim.faults),
                    fails(CudaUnavailableException.class).and("a later Cuda initializes", FaultTable::newCudaWorks),
                    fails(CudaUnavailableException.class).and("a later Cuda initializes", FaultTable::newCudaWorks)),
            call("cuDriverGetVersion", "a new Cuda over the driver", INVALID_VALUE,
                    w -> () -> FakeCuda.over(w.sim.gpu, w.sim.faults),
                    fails(CudaUnavailableException.class).and("a later Cuda initializes", FaultTable::newCudaWorks),
                    fails(CudaUnavailableException.class).and("a later Cuda initializes", FaultTable::newCudaWorks)),
            call("cuGetProcAddress_v2", "graph.createConditionalHandle(1), the first use of conditional nodes: "
                    + "the driver is asked for their entry points", INVALID_VALUE,
                    w -> {
                        Graph g = w.keep(w.open(w.ctx.createGraph()));
                        return () -> g.createConditionalHandle(1);
                    },
                    fails(DriverTooOldException.class).and("a later use asks again, and works",
                            FaultTable::conditionalHandleWorks),
                    fails(DriverTooOldException.class).and("a later use asks again, and works",
                            FaultTable::conditionalHandleWorks)),
            call("cuGetErrorString", "device.attribute(an attribute the driver rejects): the error's description",
                    INVALID_VALUE, w -> {
                        w.sim.gpu.failAttribute(CLOCK_RATE);
                        return () -> w.ctx.device().attribute(DeviceAttribute.CLOCK_RATE);
                    },
                    fails(CudaException.class).reporting(CudaDriver.CUDA_ERROR_INVALID_VALUE())
                            .and("the original error, without the driver's description", FaultTable::noDescription),
                    fails(CudaException.class).reporting(CudaDriver.CUDA_ERROR_INVALID_VALUE())
                            .and("the original error, without the driver's description", FaultTable::noDescription))
                    .withoutFault(fails(CudaException.class).reporting(CudaDriver.CUDA_ERROR_INVALID_VALUE())),
            call("cuLogsRegisterCallback", "a new Cuda over the driver", INVALID_VALUE,
                    w -> () -> FakeCuda.over(w.sim.gpu, w.sim.faults),
                    recovers("a WARN says Gatun goes on without the driver's error log", FaultTable::noDriverLogWarned)
                            .and("a later Cuda initializes", FaultTable::newCudaWorks),
                    recovers("a WARN says Gatun goes on without the driver's error log (the driver registered the "
                            + "callback anyway: its lines reach SLF4J, which is harmless)", FaultTable::noDriverLogWarned)
                            .and("a later Cuda initializes", FaultTable::newCudaWorks)),

            // ---- GPU coredumps ----
            call("cuCoredumpSetAttribute", "device 1 .context(options with GPU coredumps on), the first time",
                    INVALID_VALUE, w -> () -> w.open(w.sim.cuda.device(1).context(WITH_DUMPS)),
                    fails(CudaException.class).and("a later context() turns them on", FaultTable::dumpsTurnOnLater),
                    fails(CudaException.class).and("a later context() turns them on", FaultTable::dumpsTurnOnLater))
                    .onDevices(2),
            call("cuCoredumpGetAttribute", "device 1 .context(options with GPU coredumps on), the first time",
                    INVALID_VALUE, w -> () -> w.open(w.sim.cuda.device(1).context(WITH_DUMPS)),
                    fails(CudaException.class).and("a later context() turns them on", FaultTable::dumpsTurnOnLater),
                    fails(CudaException.class).and("a later context() turns them on", FaultTable::dumpsTurnOnLater))
                    .onDevices(2),

            // ---- Devices ----
            call("cuDeviceGetCount", "a new Cuda over the driver", INVALID_VALUE,
                    w -> () -> FakeCuda.over(w.sim.gpu, w.sim.faults),
                    fails(CudaException.class).and("a later Cuda counts the devices", FaultTable::newCudaWorks),
                    fails(CudaException.class).and("a later Cuda counts the devices", FaultTable::newCudaWorks)),
            call("cuDeviceGet", "a new Cuda over the driver", INVALID_DEVICE,
                    w -> () -> FakeCuda.over(w.sim.gpu, w.sim.faults),
                    fails(CudaException.class).and("a later Cuda finds the devices", FaultTable::newCudaWorks),
                    fails(CudaException.class).and("a later Cuda finds the devices", FaultTable::newCudaWorks)),
            call("cuDeviceGetName", "device.name()", INVALID_VALUE,
                    w -> () -> w.ctx.device().name(),
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuDeviceGetAttribute", "device.attribute(DeviceAttribute.CLOCK_RATE)", INVALID_VALUE,
                    w -> () -> w.ctx.device().attribute(DeviceAttribute.CLOCK_RATE),
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuDeviceTotalMem_v2", "device.totalMemoryBytes()", INVALID_VALUE,
                    w -> () -> w.ctx.device().totalMemoryBytes(),
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuDeviceGetPCIBusId", "device.pciBusId()", INVALID_VALUE,
                    w -> () -> w.ctx.device().pciBusId(),
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuDeviceCanAccessPeer", "device 0 .canAccessPeer(device 1)", INVALID_DEVICE,
                    w -> () -> w.sim.cuda.device(0).canAccessPeer(w.sim.cuda.device(1)),
                    fails(CudaException.class), fails(CudaException.class)).onDevices(2),
            call("cuDeviceGetP2PAttribute", "device 0 .linkTo(device 1)", INVALID_DEVICE,
                    w -> () -> w.sim.cuda.device(0).linkTo(w.sim.cuda.device(1)),
                    fails(CudaException.class), fails(CudaException.class)).onDevices(2),

            // ---- Contexts ----
            call("cuDevicePrimaryCtxRetain", "device 1 .context(options), the first time", INVALID_DEVICE,
                    w -> () -> w.context(1),
                    fails(CudaException.class).and("a later context() opens it", FaultTable::secondContextOpens),
                    fails(CudaException.class).and("a later context() opens it", FaultTable::secondContextOpens))
                    .onDevices(2),
            call("cuCtxSetCurrent", "ctx.diagnostics().memoryInfo() while device 1's context is current", INVALID_VALUE,
                    w -> {
                        w.context(1).diagnostics().memoryInfo();
                        return () -> w.ctx.diagnostics().memoryInfo();
                    },
                    fails(CudaException.class), fails(CudaException.class)).onDevices(2),
            call("cuCtxGetCurrent", "ctx.diagnostics().memoryInfo()", INVALID_VALUE,
                    w -> () -> w.ctx.diagnostics().memoryInfo(),
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuCtxSynchronize", "ctx.synchronize()", ILLEGAL_ADDRESS,
                    w -> () -> w.ctx.synchronize(),
                    poisoned(), poisoned()),
            call("cuCtxGetStreamPriorityRange", "device 1 .context(options), the first time", INVALID_VALUE,
                    w -> () -> w.context(1),
                    fails(CudaException.class).and("a later context() opens it", FaultTable::secondContextOpens),
                    fails(CudaException.class).and("a later context() opens it", FaultTable::secondContextOpens))
                    .onDevices(2),
            call("cuCtxEnablePeerAccess", "ctx.enablePeerAccess(device 1's context)", TOO_MANY_PEERS,
                    w -> {
                        CudaContext peer = w.context(1);
                        return () -> w.ctx.enablePeerAccess(peer);
                    },
                    fails(CudaException.class).and("not enabled; a later call enables it", FaultTable::peerAccessRetried),
                    fails(CudaException.class).and("not enabled; a later call enables it", FaultTable::peerAccessRetried))
                    .onDevices(2),
            call("cuCtxGetDevice", "cuda.contextOf(device 0's primary context, handed over by another library)",
                    INVALID_CONTEXT,
                    w -> () -> w.sim.cuda.contextOf(w.sim.gpu.primaryContext(0)),
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuMemGetInfo_v2", "ctx.diagnostics().memoryInfo()", INVALID_VALUE,
                    w -> () -> w.ctx.diagnostics().memoryInfo(),
                    fails(CudaException.class), fails(CudaException.class)),

            // ---- Streams ----
            call("cuStreamCreateWithPriority", "ctx.createStream()", OUT_OF_MEMORY,
                    w -> () -> w.stream(),
                    fails(CudaException.class), fails(CudaException.class).orphaning(Native.STREAM)),
            call("cuStreamDestroy_v2", "stream.close() (its retirement destroys it)", INVALID_HANDLE,
                    w -> {
                        Stream s = w.stream();
                        return s::close;
                    },
                    givenUpAtOnce().orphaning(Native.STREAM), givenUpAtOnce()),
            call("cuStreamQuery", "stream.query()", ILLEGAL_ADDRESS,
                    w -> {
                        Stream s = w.stream();
                        return s::query;
                    },
                    poisoned(), poisoned()),
            call("cuStreamSynchronize", "stream.synchronize()", ILLEGAL_ADDRESS,
                    w -> {
                        Stream s = w.stream();
                        return s::synchronize;
                    },
                    poisoned(), poisoned()),
            call("cuStreamWaitEvent", "stream.waitFor(event)", INVALID_HANDLE,
                    w -> {
                        Stream s = w.stream();
                        Event e = w.event();
                        e.record(w.ctx.computeStream());
                        return () -> s.waitFor(e);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuLaunchHostFunc", "stream.onComplete() after a memset", INVALID_HANDLE,
                    w -> {
                        Stream s = w.stream();
                        DeviceBuffer b = w.buffer(MiB);
                        s.memset(b.bytes(), (byte) 1);
                        return s::onComplete;
                    },
                    fails(CudaException.class).and("no host function was queued and no future is pending",
                            (w, e) -> completionsSettled(w, 0)),
                    fails(CudaException.class).and("the host function queued anyway fired and was ignored: no future "
                            + "is pending", (w, e) -> completionsSettled(w, 1))),
            call("cuStreamIsCapturing", "buffer.close() after a memset on an exported stream (its fence asks the driver"
                    + " whether code outside Gatun began a capture on it)",
                    INVALID_HANDLE, w -> {
                        Stream s = w.stream();
                        s.handle(); // exported: only now can a capture begin that Gatun does not count
                        DeviceBuffer b = w.buffer(MiB);
                        s.memset(b.bytes(), (byte) 1);
                        return b::close;
                    },
                    recovers("the fence is recorded at the next poll, and the buffer freed", FaultTable::nothingPending),
                    recovers("the fence is recorded at the next poll, and the buffer freed", FaultTable::nothingPending)),
            call("cuStreamGetCtx", "Stream.borrow(ctx, another library's stream)", INVALID_HANDLE,
                    w -> {
                        MemorySegment raw = w.foreignStream();
                        return () -> w.open(Stream.borrow(w.ctx, raw));
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuStreamGetPriority", "Stream.borrow(ctx, another library's stream)", INVALID_HANDLE,
                    w -> {
                        MemorySegment raw = w.foreignStream();
                        return () -> w.open(Stream.borrow(w.ctx, raw));
                    },
                    fails(CudaException.class), fails(CudaException.class)),

            // ---- Events ----
            call("cuEventCreate", "ctx.createEvent()", OUT_OF_MEMORY,
                    w -> () -> w.event(),
                    fails(CudaException.class), fails(CudaException.class).orphaning(Native.EVENT)),
            call("cuEventDestroy_v2", "event.close() (its retirement destroys it)", INVALID_HANDLE,
                    w -> {
                        Event e = w.event();
                        return e::close;
                    },
                    givenUpAtOnce().orphaning(Native.EVENT), givenUpAtOnce()),
            call("cuEventRecord", "event.record(stream)", INVALID_HANDLE,
                    w -> {
                        Stream s = w.stream();
                        Event e = w.event();
                        return () -> e.record(s);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuEventQuery", "buffer.close() after a memset on a stream (retirement polls its fence)", NOT_READY,
                    w -> {
                        Stream s = w.stream();
                        DeviceBuffer b = w.buffer(MiB);
                        s.memset(b.bytes(), (byte) 1);
                        return b::close;
                    },
                    recovers("the fence is not complete yet: freed at a later reap", FaultTable::freedAtTheNextReap),
                    recovers("the fence is not complete yet: freed at a later reap", FaultTable::freedAtTheNextReap)),
            call("cuEventSynchronize", "event.synchronize()", ILLEGAL_ADDRESS,
                    w -> {
                        Event e = w.event();
                        e.record(w.stream());
                        return e::synchronize;
                    },
                    poisoned(), poisoned()),
            call("cuEventElapsedTime_v2", "end.elapsedMillis(start)", NOT_READY, FaultTable::elapsed,
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuEventElapsedTime", "end.elapsedMillis(start) on a driver for CUDA 12.4 (no _v2)", NOT_READY,
                    FaultTable::elapsed, fails(CudaException.class), fails(CudaException.class)).onDriver(12040),

            // ---- Memory ----
            call("cuMemAlloc_v2", "ctx.allocate(1 MiB), pool off: out of memory once", OUT_OF_MEMORY,
                    w -> () -> w.buffer(MiB),
                    recovers(LADDER_RETRIES, (w, e) -> triedTwice(w, "cuMemAlloc_v2")),
                    recovers(LADDER_RETRIES, (w, e) -> triedTwice(w, "cuMemAlloc_v2")).orphaning(Native.DEVICE_ALLOCATION)),
            call("cuMemAlloc_v2", "ctx.allocate(1 MiB), pool off: out of memory twice", OUT_OF_MEMORY,
                    w -> () -> w.buffer(MiB),
                    fails(OutOfDeviceMemoryException.class),
                    fails(OutOfDeviceMemoryException.class).orphaning(Native.DEVICE_ALLOCATION)
                            .orphaning(Native.DEVICE_ALLOCATION))
                    .failing(2),
            call("cuMemFree_v2", "buffer.close(), pool off (its retirement frees it)", INVALID_VALUE,
                    w -> {
                        DeviceBuffer b = w.buffer(MiB);
                        return b::close;
                    },
                    retriedAndFreed(), retriedThenGivenUp()),
            call("cuMemAllocAsync", "stream.allocate(1 MiB): out of memory once", OUT_OF_MEMORY,
                    w -> {
                        Stream s = w.stream();
                        return () -> w.open(s.allocate(MiB));
                    },
                    recovers(LADDER_RETRIES, (w, e) -> triedTwice(w, "cuMemAllocAsync")),
                    recovers(LADDER_RETRIES, (w, e) -> triedTwice(w, "cuMemAllocAsync"))
                            .orphaning(Native.DEVICE_ALLOCATION)),
            call("cuMemAllocAsync", "stream.allocate(1 MiB): out of memory twice", OUT_OF_MEMORY,
                    w -> {
                        Stream s = w.stream();
                        return () -> w.open(s.allocate(MiB));
                    },
                    fails(OutOfDeviceMemoryException.class),
                    fails(OutOfDeviceMemoryException.class).orphaning(Native.DEVICE_ALLOCATION)
                            .orphaning(Native.DEVICE_ALLOCATION))
                    .failing(2),
            call("cuMemFreeAsync", "buffer.close() of a stream-ordered allocation", INVALID_VALUE,
                    w -> {
                        DeviceBuffer b = w.stream().allocate(MiB);
                        return b::close;
                    },
                    recovers("retirement frees it after its fence, on the copy stream", FaultTable::nothingPending),
                    retriedThenGivenUp()),
            call("cuMemAllocAsync", "stream.allocate(1 MiB) inside a capture (an allocation node)", OUT_OF_MEMORY,
                    w -> {
                        Stream s = w.stream();
                        w.open(s.beginCapture(CaptureMode.THREAD_LOCAL));
                        return () -> w.open(s.allocate(MiB));
                    },
                    fails(CudaException.class).and("no graph allocation is counted", FaultTable::noGraphAllocation),
                    fails(CudaException.class)), // the node, if made, goes with the aborted capture
            call("cuMemFreeAsync", "buffer.close() inside the capture that allocated it (a free node)", INVALID_VALUE,
                    w -> {
                        Stream s = w.stream();
                        w.open(s.beginCapture(CaptureMode.THREAD_LOCAL));
                        DeviceBuffer b = s.allocate(MiB);
                        return b::close;
                    },
                    recovers("the allocation stays the capture's, discarded with it: nothing to free",
                            FaultTable::nothingPending),
                    recovers("the allocation stays the capture's, discarded with it: nothing to free",
                            FaultTable::nothingPending)),
            call("cuMemHostAlloc", "ctx.allocatePinned(4096): out of memory once", OUT_OF_MEMORY,
                    w -> () -> w.pinned(4096),
                    recovers(LADDER_RETRIES, (w, e) -> triedTwice(w, "cuMemHostAlloc")),
                    recovers(LADDER_RETRIES, (w, e) -> triedTwice(w, "cuMemHostAlloc")).orphaning(Native.HOST_ALLOCATION)),
            call("cuMemHostAlloc", "ctx.allocatePinned(4096): out of memory twice", OUT_OF_MEMORY,
                    w -> () -> w.pinned(4096),
                    fails(OutOfDeviceMemoryException.class),
                    fails(OutOfDeviceMemoryException.class).orphaning(Native.HOST_ALLOCATION)
                            .orphaning(Native.HOST_ALLOCATION))
                    .failing(2),
            call("cuMemFreeHost", "pinned.close() (its retirement frees it)", INVALID_VALUE,
                    w -> {
                        PinnedBuffer p = w.pinned(4096);
                        return p::close;
                    },
                    retriedAndFreed(), retriedThenGivenUp()),
            call("cuMemsetD8Async", "stream.memset(view, 1)", INVALID_VALUE,
                    w -> {
                        Stream s = w.stream();
                        DeviceBuffer b = w.buffer(4096);
                        return () -> s.memset(b.bytes(), (byte) 1);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuMemsetD32Async", "stream.fill(view, 7)", INVALID_VALUE,
                    w -> {
                        Stream s = w.stream();
                        DeviceBuffer b = w.buffer(4096);
                        return () -> s.fill(b.asInts(), 7);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuMemcpyHtoDAsync_v2", "view.copyFrom(byte[]) through staging", INVALID_VALUE,
                    w -> {
                        DeviceBuffer b = w.buffer(4096);
                        return () -> b.bytes().copyFrom(new byte[4096]);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuMemcpyHtoDAsync_v2", "stream.upload(view, pinned, 0)", INVALID_VALUE,
                    w -> {
                        Stream s = w.stream();
                        DeviceBuffer b = w.buffer(4096);
                        PinnedBuffer p = w.keep(w.pinned(4096));
                        w.keep(s);
                        w.keep(b);
                        return () -> s.upload(b.bytes(), p, 0);
                    },
                    fails(CudaException.class).and("the pinned buffer is fenced and usable", FaultTable::pinnedUsable),
                    fails(CudaException.class).and("the pinned buffer is fenced and usable", FaultTable::pinnedUsable)),
            call("cuMemcpyDtoHAsync_v2", "view.copyTo(byte[]) through staging", INVALID_VALUE,
                    w -> {
                        DeviceBuffer b = w.buffer(4096);
                        return () -> b.bytes().copyTo(new byte[4096]);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuMemcpyDtoHAsync_v2", "stream.download(pinned, 0, view)", INVALID_VALUE,
                    w -> {
                        Stream s = w.stream();
                        DeviceBuffer b = w.buffer(4096);
                        PinnedBuffer p = w.keep(w.pinned(4096));
                        w.keep(s);
                        w.keep(b);
                        return () -> s.download(p, 0, b.bytes());
                    },
                    fails(CudaException.class).and("the pinned buffer is fenced and usable", FaultTable::pinnedUsable),
                    fails(CudaException.class).and("the pinned buffer is fenced and usable", FaultTable::pinnedUsable)),
            // A transfer through a pinned buffer follows the last one, on another stream, on the GPU (issue 36 §3).
            call("cuStreamWaitEvent", "stream.download(pinned, 0, view) behind an upload through it on another stream",
                    INVALID_HANDLE, w -> pinnedBehindAnotherStream(w, false),
                    fails(CudaException.class).and("the pinned buffer is fenced and usable", FaultTable::pinnedUsable),
                    fails(CudaException.class).and("the pinned buffer is fenced and usable", FaultTable::pinnedUsable)),
            call("cuEventRecord", "stream.download(pinned, 0, view) behind an upload on another stream whose fence failed: "
                    + "the fresh fence there", INVALID_HANDLE, w -> pinnedBehindAnotherStream(w, true),
                    fails(CudaException.class).and("the pinned buffer is fenced and usable", FaultTable::pinnedUsable),
                    fails(CudaException.class).and("the pinned buffer is fenced and usable", FaultTable::pinnedUsable)),
            call("cuStreamWaitEvent", "CopyBatch.submit(stream) behind an upload through its pinned buffer on another stream",
                    INVALID_HANDLE, w -> {
                        pinnedBehindAnotherStream(w, false);
                        Stream s = w.kept(Stream.class);
                        PinnedBuffer p = w.kept(PinnedBuffer.class);
                        DeviceBuffer b = w.kept(DeviceBuffer.class);
                        CopyBatch batch = w.open(CopyBatch.create(1));
                        return () -> batch.download(p, 0, b.bytes()).submit(s);
                    },
                    fails(CudaException.class).and("the pinned buffer is fenced and usable", FaultTable::pinnedUsable),
                    fails(CudaException.class).and("the pinned buffer is fenced and usable", FaultTable::pinnedUsable)),
            call("cuMemcpyDtoDAsync_v2", "stream.copy(view, view)", INVALID_VALUE,
                    w -> {
                        Stream s = w.stream();
                        DeviceBuffer to = w.buffer(4096);
                        DeviceBuffer from = w.buffer(4096);
                        return () -> s.copy(to.bytes(), from.bytes());
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuMemcpyBatchAsync_v2", "CopyBatch.submit(stream) of an upload and a device copy", INVALID_VALUE,
                    w -> batchScenario(w, CopyBatch.Submission.BATCHED),
                    fails(CudaException.class).and("the pinned buffer is fenced and usable", FaultTable::pinnedUsable),
                    fails(CudaException.class).and("the pinned buffer is fenced and usable", FaultTable::pinnedUsable)),
            call("cuMemcpyAsync", "CopyBatch.submit(stream), one copy at a time", INVALID_VALUE,
                    w -> batchScenario(w, CopyBatch.Submission.ONE_AT_A_TIME),
                    fails(CudaException.class).and("the pinned buffer is fenced and usable", FaultTable::pinnedUsable),
                    fails(CudaException.class).and("the pinned buffer is fenced and usable", FaultTable::pinnedUsable)),
            call("cuPointerGetAttributes", "DeviceBuffer.borrow(ctx, another library's 1 MiB allocation)", INVALID_VALUE,
                    w -> {
                        long address = w.foreignDeviceMemory(MiB);
                        return () -> w.open(DeviceBuffer.borrow(w.ctx, address, MiB));
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuMemcpyPeerAsync", "stream.copy(device 1 view, device 0 view)", INVALID_VALUE,
                    w -> {
                        DeviceBuffer to = w.open(w.context(1).allocate(4096));
                        Stream s = w.stream();
                        DeviceBuffer from = w.buffer(4096);
                        return () -> s.copy(to.bytes(), from.bytes());
                    },
                    fails(CudaException.class), fails(CudaException.class)).onDevices(2),

            // ---- Memory pools ----
            call("cuDeviceGetDefaultMemPool", "ctx.defaultMemoryPool().releaseThresholdBytes(), its first use", INVALID_VALUE,
                    w -> {
                        MemoryPool p = w.keep(w.ctx.defaultMemoryPool());
                        return p::releaseThresholdBytes;
                    },
                    fails(CudaException.class).and("a later use asks again, and reads", FaultTable::defaultPoolRetried),
                    fails(CudaException.class).and("a later use asks again, and reads", FaultTable::defaultPoolRetried)),
            call("cuMemPoolCreate", "ctx.createMemoryPool(defaults)", OUT_OF_MEMORY,
                    w -> () -> w.pool(),
                    fails(CudaException.class), fails(CudaException.class).orphaning(Native.MEMORY_POOL)),
            call("cuMemPoolDestroy", "pool.close() (its retirement destroys it)", INVALID_HANDLE,
                    w -> {
                        MemoryPool p = w.pool();
                        return p::close;
                    },
                    givenUpAtOnce().orphaning(Native.MEMORY_POOL), givenUpAtOnce()),
            call("cuMemPoolSetAttribute", "pool.setReleaseThresholdBytes(1 MiB)", INVALID_VALUE,
                    w -> {
                        MemoryPool p = w.pool();
                        return () -> p.setReleaseThresholdBytes(MiB);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuMemPoolGetAttribute", "pool.usage()", INVALID_VALUE,
                    w -> {
                        MemoryPool p = w.pool();
                        return p::usage;
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuMemPoolTrimTo", "pool.trimTo(0)", INVALID_VALUE,
                    w -> {
                        MemoryPool p = w.pool();
                        return () -> p.trimTo(0);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuMemPoolSetAccess", "pool.setAccess(device 1's context, READ_WRITE)", INVALID_DEVICE,
                    w -> {
                        CudaContext peer = w.context(1);
                        MemoryPool p = w.pool();
                        return () -> p.setAccess(peer, MemoryAccess.READ_WRITE);
                    },
                    fails(CudaException.class), fails(CudaException.class)).onDevices(2),
            call("cuMemPoolGetAccess", "pool.access(device 1's context)", INVALID_DEVICE,
                    w -> {
                        CudaContext peer = w.context(1);
                        MemoryPool p = w.pool();
                        return () -> p.access(peer);
                    },
                    fails(CudaException.class), fails(CudaException.class)).onDevices(2),
            call("cuMemAllocFromPoolAsync", "pool.allocate(stream, 1 MiB): out of memory once", OUT_OF_MEMORY,
                    w -> {
                        Stream s = w.stream();
                        MemoryPool p = w.keep(w.pool());
                        return () -> w.open(p.allocate(s, MiB));
                    },
                    recovers(LADDER_RETRIES, (w, e) -> triedTwice(w, "cuMemAllocFromPoolAsync")),
                    recovers(LADDER_RETRIES, (w, e) -> triedTwice(w, "cuMemAllocFromPoolAsync"))
                            .orphaning(Native.DEVICE_ALLOCATION)
                            .flagging("cuMemPoolDestroy of a pool with 1 allocations not freed")),
            call("cuMemAllocFromPoolAsync", "pool.allocate(stream, 1 MiB): out of memory twice", OUT_OF_MEMORY,
                    w -> {
                        Stream s = w.stream();
                        MemoryPool p = w.keep(w.pool());
                        return () -> w.open(p.allocate(s, MiB));
                    },
                    fails(OutOfDeviceMemoryException.class).and("the pool is not held by the failed allocation: its "
                            + "close destroys it", FaultTable::poolDestroyedAtClose),
                    fails(OutOfDeviceMemoryException.class).orphaning(Native.DEVICE_ALLOCATION)
                            .orphaning(Native.DEVICE_ALLOCATION)
                            .flagging("cuMemPoolDestroy of a pool with 2 allocations not freed"))
                    .failing(2),

            // ---- Graph memory ----
            call("cuDeviceGraphMemTrim", "ctx.diagnostics().trimGraphMemory()", INVALID_VALUE,
                    w -> w.ctx.diagnostics()::trimGraphMemory,
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuDeviceGetGraphMemAttribute", "ctx.diagnostics().graphMemoryUsage()", INVALID_VALUE,
                    w -> w.ctx.diagnostics()::graphMemoryUsage,
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuDeviceSetGraphMemAttribute", "ctx.diagnostics().resetGraphMemoryPeaks()", INVALID_VALUE,
                    w -> w.ctx.diagnostics()::resetGraphMemoryPeaks,
                    fails(CudaException.class), fails(CudaException.class)),

            // ---- Virtual memory management (growable buffers) ----
            call("cuMemGetAllocationGranularity", "ctx.reserveGrowable(8 MiB)", INVALID_VALUE,
                    w -> () -> w.growable(),
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuMemAddressReserve", "ctx.reserveGrowable(8 MiB), exactly: no fallback", OUT_OF_MEMORY,
                    w -> () -> w.growable(),
                    fails(CudaException.class), fails(CudaException.class).orphaning(Native.ADDRESS_RANGE)),
            call("cuMemAddressFree", "growable.close() (its retirement frees the range)", INVALID_VALUE,
                    w -> {
                        GrowableBuffer g = w.growable();
                        g.grow(MiB);
                        return g::close;
                    },
                    retriedAndFreed(), retriedThenGivenUp()),
            call("cuMemCreate", "growable.grow(1 MiB): out of memory once", OUT_OF_MEMORY,
                    w -> {
                        GrowableBuffer g = w.keep(w.growable());
                        return () -> g.grow(MiB);
                    },
                    recovers(LADDER_RETRIES, FaultTable::grownOnRetry),
                    recovers(LADDER_RETRIES, FaultTable::grownOnRetry).orphaning(Native.PHYSICAL_ALLOCATION)),
            call("cuMemCreate", "growable.grow(1 MiB): out of memory twice", OUT_OF_MEMORY,
                    w -> {
                        GrowableBuffer g = w.keep(w.growable());
                        return () -> g.grow(MiB);
                    },
                    fails(OutOfDeviceMemoryException.class).and("nothing mapped, and a retry grows",
                            FaultTable::growableRetried),
                    fails(OutOfDeviceMemoryException.class).and("nothing mapped, and a retry grows",
                            FaultTable::growableRetried).orphaning(Native.PHYSICAL_ALLOCATION)
                            .orphaning(Native.PHYSICAL_ALLOCATION))
                    .failing(2),
            call("cuMemMap", "growable.grow(1 MiB)", OUT_OF_MEMORY,
                    w -> {
                        GrowableBuffer g = w.keep(w.growable());
                        return () -> g.grow(MiB);
                    },
                    recovers(LADDER_RETRIES, FaultTable::grownOnRetry),
                    // Mapped, then reported failed: Gatun released the chunk it believes unmapped, and
                    // the ladder's retry maps over the orphaned mapping, which the driver refuses (not
                    // out of memory: reported as it is); freeing the range unmaps it.
                    fails(CudaException.class).reporting(INVALID_VALUE).flagging("cuMemAddressFree of ")),
            call("cuMemSetAccess", "growable.grow(1 MiB)", INVALID_VALUE,
                    w -> {
                        GrowableBuffer g = w.keep(w.growable());
                        return () -> g.grow(MiB);
                    },
                    fails(CudaException.class).and("the chunk rolled back, and a retry grows", FaultTable::growableRetried),
                    fails(CudaException.class).and("the chunk rolled back, and a retry grows", FaultTable::growableRetried)),
            call("cuMemUnmap", "growable.close() with one chunk mapped (its retirement unmaps it)", INVALID_VALUE,
                    w -> {
                        GrowableBuffer g = w.growable();
                        g.grow(MiB);
                        return g::close;
                    },
                    retriedAndFreed(),
                    retriedThenGivenUp().orphaning(Native.PHYSICAL_ALLOCATION).orphaning(Native.ADDRESS_RANGE)),
            call("cuMemRelease", "growable.close() with one chunk mapped (its retirement releases it)", INVALID_VALUE,
                    w -> {
                        GrowableBuffer g = w.growable();
                        g.grow(MiB);
                        return g::close;
                    },
                    retriedAndFreed(), retriedThenGivenUp().orphaning(Native.ADDRESS_RANGE)),
            call("cuMemPoolExportToShareableHandle", "pool.exportFileDescriptor() of an exportable pool", INVALID_VALUE,
                    w -> {
                        MemoryPool p = w.exportablePool();
                        return p::exportFileDescriptor;
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuMemPoolImportFromShareableHandle", "MemoryPool.importFrom(ctx, fd)", INVALID_VALUE,
                    w -> {
                        int fd = w.exportablePool().exportFileDescriptor();
                        return () -> w.open(MemoryPool.importFrom(w.ctx, fd));
                    },
                    fails(CudaException.class), fails(CudaException.class).orphaning(Native.MEMORY_POOL)),
            call("cuMemPoolExportPointer", "buffer.exportForIpc() of an allocation from an exportable pool", INVALID_VALUE,
                    w -> {
                        MemoryPool p = w.exportablePool();
                        DeviceBuffer b = w.open(p.allocate(w.stream(), MiB));
                        p.exportFileDescriptor(); // the driver exports no allocation of a pool not exported
                        return b::exportForIpc;
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuMemPoolImportPointer", "importedPool.importAllocation(an exported allocation)", INVALID_VALUE,
                    w -> {
                        MemoryPool p = w.exportablePool();
                        DeviceBuffer b = w.open(p.allocate(w.stream(), MiB));
                        MemoryPool imported = w.open(MemoryPool.importFrom(w.ctx, p.exportFileDescriptor()));
                        IpcBufferExport exported = b.exportForIpc();
                        return () -> w.open(imported.importAllocation(exported));
                    },
                    fails(CudaException.class), fails(CudaException.class).orphaning(Native.IPC_MAPPING)
                            .flagging("cuMemFreeAsync of 0x", "cuMemPoolDestroy of a pool with 1 allocations not freed")),

            // ---- Interprocess sharing (IPC) of device memory and events ----
            call("cuIpcGetMemHandle", "buffer.exportForIpc()", INVALID_VALUE,
                    w -> {
                        DeviceBuffer b = w.buffer(MiB);
                        return b::exportForIpc;
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuIpcOpenMemHandle_v2", "DeviceBuffer.importFrom(ctx, an exported buffer's handle)", INVALID_VALUE,
                    w -> {
                        IpcBufferExport h = w.buffer(MiB).exportForIpc();
                        return () -> w.open(DeviceBuffer.importFrom(w.ctx, h));
                    },
                    fails(CudaException.class), fails(CudaException.class).orphaning(Native.IPC_MAPPING)
                            .flagging("cuMemFree of 0x")),
            call("cuIpcCloseMemHandle", "imported.close() (its retirement unmaps it)", INVALID_VALUE,
                    w -> {
                        DeviceBuffer imported = DeviceBuffer.importFrom(w.ctx, w.buffer(MiB).exportForIpc());
                        return imported::close;
                    },
                    retriedAndFreed(), retriedThenGivenUp()),
            call("cuIpcGetEventHandle", "event.exportForIpc() of an interprocess event", INVALID_VALUE,
                    w -> {
                        Event e = w.open(w.ctx.createInterprocessEvent());
                        return e::exportForIpc;
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuIpcOpenEventHandle", "Event.importFrom(ctx, an exported event's handle)", INVALID_VALUE,
                    w -> {
                        IpcEventHandle h = w.open(w.ctx.createInterprocessEvent()).exportForIpc();
                        return () -> w.open(Event.importFrom(w.ctx, h));
                    },
                    fails(CudaException.class), fails(CudaException.class).orphaning(Native.EVENT)),

            // ---- Modules, functions and launches ----
            call("cuModuleLoadData", "modules().load(name, image) replacing a loaded module", INVALID_IMAGE,
                    w -> {
                        w.loadModule();
                        return () -> w.ctx.modules().load(FaultWorld.MODULE, FaultWorld.IMAGE);
                    },
                    fails(ImageRejectedException.class).and("the previous entry stays", FaultTable::previousModuleStays),
                    fails(ImageRejectedException.class).and("the previous entry stays", FaultTable::previousModuleStays)
                            .orphaning(Native.MODULE)),
            call("cuModuleUnload", "modules().unload(name) (its retirement unloads it)", INVALID_HANDLE,
                    w -> {
                        w.ctx.modules().load(FaultWorld.MODULE, FaultWorld.IMAGE);
                        return () -> w.ctx.modules().unload(FaultWorld.MODULE);
                    },
                    givenUpAtOnce().orphaning(Native.MODULE), givenUpAtOnce()),
            call("cuModuleGetFunction", "modules().kernel(name, kernel)", INVALID_HANDLE,
                    w -> {
                        w.loadModule();
                        return () -> w.open(w.ctx.modules().kernel(FaultWorld.MODULE, FaultWorld.KERNEL));
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuFuncGetAttribute", "kernel.attribute(NUM_REGS)", INVALID_HANDLE,
                    w -> {
                        Kernel k = w.kernel();
                        return () -> k.attribute(KernelAttribute.NUM_REGS);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuFuncSetAttribute", "kernel.setAttribute(PREFERRED_SHARED_MEMORY_CARVEOUT, 50)", INVALID_VALUE,
                    w -> {
                        Kernel k = w.kernel();
                        return () -> k.setAttribute(KernelAttribute.PREFERRED_SHARED_MEMORY_CARVEOUT, 50);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuFuncGetParamInfo", "kernel.parameters()", INVALID_HANDLE,
                    w -> {
                        Kernel k = w.kernel();
                        return k::parameters;
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuLaunchKernel", "launch.launch(stream): a sticky error", ILLEGAL_ADDRESS,
                    w -> {
                        Stream s = w.stream();
                        KernelLaunch l = w.launch(w.kernel(), LaunchConfig.of(1, 64));
                        return () -> l.launch(s);
                    },
                    poisoned(), poisoned()),
            call("cuLaunchKernel", "launch.launch(stream): a rejected launch", INVALID_VALUE,
                    w -> {
                        Stream s = w.keep(w.stream());
                        KernelLaunch l = w.keep(w.launch(w.kernel(), LaunchConfig.of(1, 64)));
                        DeviceBuffer earlier = w.buffer(256);
                        w.sim.gpu.hold(s.handle()); // the GPU is busy on the stream: work before the launch waits
                        w.open(() -> w.sim.gpu.release(s.handle()));
                        s.memset(earlier.bytes(), (byte) 0);
                        return () -> l.launch(s);
                    },
                    // Restated with the kernel's attributes, the configuration and the occupancy.
                    fails(LaunchRefusedException.class).and("uncertain until its stream is idle, then it launches again",
                            FaultTable::relaunchAfterIdle),
                    fails(LaunchRefusedException.class).and("uncertain until its stream is idle, then it launches again",
                            FaultTable::relaunchAfterIdle)),
            call("cuLaunchCooperativeKernel", "a cooperative launch.launch(stream)", ILLEGAL_ADDRESS,
                    w -> {
                        Stream s = w.stream();
                        KernelLaunch l = w.launch(w.kernel(), LaunchConfig.of(1, 64).withCooperative(true));
                        return () -> l.launch(s);
                    },
                    poisoned(), poisoned()),
            call("cuLaunchKernelEx", "a cluster launch.launch(stream)", ILLEGAL_ADDRESS,
                    w -> {
                        Stream s = w.stream();
                        KernelLaunch l = w.launch(w.kernel(), LaunchConfig.of(2, 64).withCluster(2, 1, 1));
                        return () -> l.launch(s);
                    },
                    poisoned(), poisoned()),
            call("cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", "kernel.maxActiveBlocksPerMultiprocessor(256, 0)",
                    INVALID_VALUE, w -> {
                        Kernel k = w.kernel();
                        return () -> k.maxActiveBlocksPerMultiprocessor(256, 0);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuOccupancyMaxPotentialBlockSizeWithFlags", "kernel.suggestBlockSize(0, 0)", INVALID_VALUE,
                    w -> {
                        Kernel k = w.kernel();
                        return () -> k.suggestBlockSize(0, 0);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuOccupancyMaxActiveClusters", "kernel.maxActiveClusters(a 2-block cluster)", INVALID_VALUE,
                    w -> {
                        Kernel k = w.kernel();
                        return () -> k.maxActiveClusters(LaunchConfig.of(2, 64).withCluster(2, 1, 1));
                    },
                    fails(CudaException.class), fails(CudaException.class)),

            // ---- Stream capture and graphs ----
            call("cuStreamBeginCapture_v2", "stream.beginCapture(GLOBAL)", ILLEGAL_STATE,
                    w -> {
                        Stream s = w.keep(w.stream());
                        return () -> w.open(s.beginCapture(CaptureMode.GLOBAL));
                    },
                    fails(CudaException.class).and("the stream runs work, not records it", FaultTable::streamRunsWork),
                    fails(CudaException.class).and("any capture the driver began is ended, so the stream runs work",
                            FaultTable::streamRunsWork)),
            call("cuStreamEndCapture", "capture.end() of an invalidated capture", CAPTURE_INVALIDATED,
                    w -> {
                        Stream s = w.keep(w.stream());
                        KernelLaunch l = w.launch(w.kernel(), LaunchConfig.of(1, 64));
                        StreamCapture capture = w.open(s.beginCapture(CaptureMode.GLOBAL));
                        l.launch(s);
                        return () -> w.open(capture.end());
                    },
                    fails(CaptureInvalidatedException.class).and("the capture the driver did not end is ended, so "
                            + "the stream runs work", FaultTable::streamRunsWork),
                    fails(CaptureInvalidatedException.class).and("the stream runs work", FaultTable::streamRunsWork)
                            .orphaning(Native.GRAPH)),
            call("cuGraphInstantiateWithFlags", "graph.instantiate()", OUT_OF_MEMORY,
                    w -> {
                        Graph g = w.graph(w.kernel(), w.stream());
                        return () -> w.exec(g);
                    },
                    fails(CudaException.class), fails(CudaException.class).orphaning(Native.GRAPH_EXEC)
                            .flagging("cuGraphDestroy of a graph a live executable was instantiated from",
                                    "cuMemFree of", "cuModuleUnload of a module a live graph executable launches")),
            call("cuGraphLaunch", "exec.launch(stream)", ILLEGAL_ADDRESS,
                    w -> {
                        Stream s = w.stream();
                        GraphExec exec = w.exec(w.graph(w.kernel(), s));
                        return () -> exec.launch(s);
                    },
                    poisoned(), poisoned()),
            call("cuGraphUpload", "exec.upload(stream)", INVALID_VALUE,
                    w -> {
                        Stream s = w.stream();
                        GraphExec exec = w.exec(w.graph(w.kernel(), s));
                        return () -> exec.upload(s);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuGraphDestroy", "graph.close() (its retirement destroys it)", INVALID_HANDLE,
                    w -> {
                        Graph g = w.graph(w.kernel(), w.stream());
                        return g::close;
                    },
                    givenUpAtOnce().orphaning(Native.GRAPH), givenUpAtOnce()),
            call("cuGraphExecDestroy", "exec.close() (its retirement destroys it)", INVALID_HANDLE,
                    w -> {
                        GraphExec exec = w.exec(w.graph(w.kernel(), w.stream()));
                        return exec::close;
                    },
                    // Before the call the executable stays alive in the simulator, which then flags the
                    // frees of what it held, dropped as for any abandoned executable (nothing launches it).
                    givenUpAtOnce().orphaning(Native.GRAPH_EXEC).flagging("cuGraphDestroy of a graph a live executable",
                            "cuMemFree of ", "cuModuleUnload of a module a live graph executable"),
                    givenUpAtOnce()),
            call("cuGraphExecUpdate_v2", "exec.update(graph of the same topology)", INVALID_VALUE,
                    w -> {
                        Kernel k = w.kernel();
                        Stream s = w.stream();
                        GraphExec exec = w.exec(w.graph(k, s));
                        Graph next = w.graph(k, s);
                        return () -> exec.update(next);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            // Capture arenas and the update-or-instantiate policy (issue 23).
            call("cuStreamWaitEvent", "exec.launch(stream) of a capture arena's graph last replayed on another stream",
                    INVALID_HANDLE, FaultTable::arenaReplayOnAnotherStream,
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuGraphExecUpdate_v2", "updatingExecutable.install(graph of the same topology)", INVALID_VALUE,
                    w -> {
                        Kernel k = w.kernel();
                        Stream s = w.stream();
                        UpdatingExecutable exec = w.open(UpdatingExecutable.instantiate(w.graph(k, s)));
                        Graph next = w.graph(k, s);
                        return () -> exec.install(next);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuGraphInstantiateWithFlags", "updatingExecutable.install(graph of another topology)", INVALID_VALUE,
                    w -> {
                        Kernel k = w.kernel();
                        Stream s = w.stream();
                        UpdatingExecutable exec = w.open(UpdatingExecutable.instantiate(w.graph(k, s)));
                        KernelLaunch launch = w.launch(k, LaunchConfig.of(1, 64));
                        Graph next;
                        try (StreamCapture capture = s.beginCapture(CaptureMode.THREAD_LOCAL)) {
                            launch.launch(s);
                            launch.launch(s);
                            next = w.open(capture.end());
                        }
                        return () -> exec.install(next);
                    },
                    fails(CudaException.class), fails(CudaException.class).orphaning(Native.GRAPH_EXEC)
                            .flagging("cuGraphDestroy of a graph a live executable was instantiated from",
                                    "cuMemFree of", "cuModuleUnload of a module a live graph executable launches")),
            call("cuGraphGetNodes", "exec.updateKernelNode(0, launch)", INVALID_VALUE,
                    FaultTable::nodeUpdate, fails(CudaException.class), fails(CudaException.class)),
            call("cuGraphNodeGetType", "exec.updateKernelNode(0, launch)", INVALID_VALUE,
                    FaultTable::nodeUpdate, fails(CudaException.class), fails(CudaException.class)),
            call("cuGraphKernelNodeGetParams_v2", "exec.updateKernelNode(0, launch)", INVALID_VALUE,
                    FaultTable::nodeUpdate, fails(CudaException.class), fails(CudaException.class)),
            call("cuGraphExecKernelNodeSetParams_v2", "exec.updateKernelNode(0, launch)", INVALID_VALUE,
                    FaultTable::nodeUpdate, fails(CudaException.class), fails(CudaException.class)),
            call("cuGraphCreate", "ctx.createGraph()", OUT_OF_MEMORY,
                    w -> () -> w.open(w.ctx.createGraph()),
                    fails(CudaException.class), fails(CudaException.class).orphaning(Native.GRAPH)),
            call("cuGraphAddKernelNode_v2", "graph.addKernel(launch)", INVALID_VALUE,
                    w -> {
                        Graph g = w.open(w.ctx.createGraph());
                        KernelLaunch l = w.launch(w.kernel(), LaunchConfig.of(1, 64));
                        return () -> g.addKernel(l);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuGraphAddMemsetNode", "graph.addMemset(view, value)", INVALID_VALUE,
                    w -> {
                        Graph g = w.open(w.ctx.createGraph());
                        DeviceBuffer b = w.buffer(256);
                        return () -> g.addMemset(b.bytes(), (byte) 7);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuGraphAddMemcpyNode", "graph.addCopy(destination, source)", INVALID_VALUE,
                    w -> {
                        Graph g = w.open(w.ctx.createGraph());
                        DeviceBuffer to = w.buffer(256);
                        DeviceBuffer from = w.buffer(256);
                        return () -> g.addCopy(to.bytes(), from.bytes());
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuGraphClone", "graph.copy()", OUT_OF_MEMORY,
                    w -> {
                        Graph g = w.graph(w.kernel(), w.stream());
                        return () -> w.open(g.copy());
                    },
                    fails(CudaException.class), fails(CudaException.class).orphaning(Native.GRAPH)),
            call("cuGraphDebugDotPrint", "graph.writeDot(file)", INVALID_VALUE,
                    w -> {
                        Graph g = w.graph(w.kernel(), w.stream());
                        Path dir = Files.createTempDirectory("gatun-dot");
                        Path file = dir.resolve("graph.dot");
                        w.open(() -> {
                            Files.deleteIfExists(file); // written when the call was made, then failed
                            Files.delete(dir);
                        });
                        return () -> g.writeDot(file);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuGraphNodeSetEnabled", "exec.setEnabled(node, false)", INVALID_VALUE,
                    w -> {
                        Graph g = w.open(w.ctx.createGraph());
                        GraphNode n = g.addMemset(w.buffer(256).bytes(), (byte) 0);
                        GraphExec exec = w.exec(g);
                        return () -> exec.setEnabled(n, false);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuGraphAddEventRecordNode", "graph.addEventRecord(event)", INVALID_VALUE,
                    w -> {
                        Graph g = w.open(w.ctx.createGraph());
                        Event e = w.event();
                        return () -> g.addEventRecord(e);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuGraphAddEventWaitNode", "graph.addEventWait(event)", INVALID_VALUE,
                    w -> {
                        Graph g = w.open(w.ctx.createGraph());
                        Event e = w.event();
                        return () -> g.addEventWait(e);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuGraphExecEventRecordNodeSetEvent", "exec.setEvent(record node, another event)", INVALID_VALUE,
                    w -> {
                        Graph g = w.open(w.ctx.createGraph());
                        GraphNode n = g.addEventRecord(w.event());
                        GraphExec exec = w.exec(g);
                        Event other = w.event();
                        return () -> exec.setEvent(n, other);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuGraphExecEventWaitNodeSetEvent", "exec.setEvent(wait node, another event)", INVALID_VALUE,
                    w -> {
                        Graph g = w.open(w.ctx.createGraph());
                        GraphNode n = g.addEventWait(w.event());
                        GraphExec exec = w.exec(g);
                        Event other = w.event();
                        return () -> exec.setEvent(n, other);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuGraphAddHostNode", "graph.addHost(callback)", INVALID_VALUE,
                    w -> {
                        Graph g = w.open(w.ctx.createGraph());
                        return () -> g.addHost(() -> { });
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuGraphAddChildGraphNode", "graph.addChild(child)", INVALID_VALUE,
                    w -> {
                        Graph g = w.open(w.ctx.createGraph());
                        Graph child = w.open(w.ctx.createGraph());
                        child.addMemset(w.buffer(256).bytes(), (byte) 0);
                        return () -> g.addChild(child);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuGraphDestroyNode", "graph.remove(node)", INVALID_VALUE,
                    w -> {
                        Graph g = w.open(w.ctx.createGraph());
                        GraphNode n = g.addMemset(w.buffer(256).bytes(), (byte) 0);
                        return () -> g.remove(n);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuGraphAddDependencies_v2", "graph.addProgrammaticDependency(producer, consumer)", INVALID_VALUE,
                    w -> {
                        Graph g = w.open(w.ctx.createGraph());
                        Kernel k = w.kernel();
                        GraphNode producer = g.addKernel(w.launch(k, LaunchConfig.of(1, 64)));
                        GraphNode consumer = g.addKernel(w.launch(k, LaunchConfig.of(1, 64)));
                        return () -> g.addProgrammaticDependency(producer, consumer);
                    },
                    fails(CudaException.class), fails(CudaException.class)),

            // ---- Conditional graph nodes ----
            call("cuGraphConditionalHandleCreate", "graph.createConditionalHandle(1)", OUT_OF_MEMORY,
                    w -> {
                        Graph g = w.open(w.ctx.createGraph());
                        return () -> g.createConditionalHandle(1);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuGraphAddNode_v2", "graph.addWhile(handle)", INVALID_VALUE,
                    w -> {
                        Graph g = w.open(w.ctx.createGraph());
                        ConditionalHandle h = g.createConditionalHandle(1);
                        return () -> g.addWhile(h);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuStreamGetCaptureInfo_v3", "capture.createConditionalHandle(1)", INVALID_VALUE,
                    w -> {
                        Stream s = w.keep(w.stream());
                        StreamCapture capture = w.keep(w.open(s.beginCapture(CaptureMode.THREAD_LOCAL)));
                        return () -> capture.createConditionalHandle(1);
                    },
                    fails(CudaException.class).and("the capture aborts, and the stream runs work",
                            FaultTable::captureAbortsAndStreamRunsWork),
                    fails(CudaException.class).and("the capture aborts, and the stream runs work",
                            FaultTable::captureAbortsAndStreamRunsWork)),
            call("cuStreamUpdateCaptureDependencies_v2", "capture.addWhile(handle)", INVALID_VALUE,
                    w -> {
                        Stream s = w.keep(w.stream());
                        StreamCapture capture = w.keep(w.open(s.beginCapture(CaptureMode.THREAD_LOCAL)));
                        ConditionalHandle h = w.keep(capture.createConditionalHandle(1));
                        return () -> capture.addWhile(h);
                    },
                    fails(CudaException.class).and("the graph refuses to be instantiated, and the capture aborts",
                            FaultTable::capturedGraphRefusedThenAborted),
                    fails(CudaException.class).and("the graph refuses to be instantiated, and the capture aborts",
                            FaultTable::capturedGraphRefusedThenAborted)),
            call("cuStreamBeginCaptureToGraph", "body.beginCapture(stream, GLOBAL)", ILLEGAL_STATE,
                    w -> {
                        Graph g = w.open(w.ctx.createGraph());
                        Graph body = g.addWhile(g.createConditionalHandle(1)).body();
                        Stream s = w.keep(w.stream());
                        return () -> w.open(body.beginCapture(s, CaptureMode.GLOBAL));
                    },
                    fails(CudaException.class).and("the stream runs work, not records it", FaultTable::streamRunsWork),
                    fails(CudaException.class).and("any capture the driver began is ended, so the stream runs work",
                            FaultTable::streamRunsWork)),
            call("cuStreamWriteValue32_v2", "stream.memOps().write32(word, 5)", INVALID_VALUE,
                    w -> {
                        Stream s = w.stream();
                        DeviceBuffer b = w.buffer(256);
                        return () -> s.memOps().write32(b.asInts().slice(0, 1), 5, WriteFlag.DEFAULT);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuStreamWriteValue64_v2", "stream.memOps().write64(mapped word, 5)", INVALID_VALUE,
                    w -> {
                        w.sim.gpu.attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS(), 1);
                        Stream s = w.stream();
                        MappedWord m = w.open(w.ctx.allocateMappedWord());
                        return () -> s.memOps().write64(m, 5L, WriteFlag.DEFAULT);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuStreamWaitValue32_v2", "stream.memOps().wait32(word, 0, GEQ)", INVALID_VALUE,
                    w -> {
                        Stream s = w.stream();
                        DeviceBuffer b = w.buffer(256);
                        b.bytes().copyFrom(new byte[256]);
                        return () -> s.memOps().wait32(b.asInts().slice(0, 1), 0, WaitCondition.GEQ, WaitFlag.DEFAULT);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuStreamWaitValue64_v2", "stream.memOps().wait64(word, 0, EQ)", INVALID_VALUE,
                    w -> {
                        w.sim.gpu.attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS(), 1);
                        Stream s = w.stream();
                        DeviceBuffer b = w.buffer(256);
                        b.bytes().copyFrom(new byte[256]);
                        return () -> s.memOps().wait64(b.asLongs().slice(0, 1), 0L, WaitCondition.EQ, WaitFlag.DEFAULT);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuStreamBatchMemOp_v2", "stream.memOps().batch(two writes)", INVALID_VALUE,
                    w -> {
                        Stream s = w.stream();
                        DeviceBuffer b = w.buffer(256);
                        List<MemOp> ops = List.of(MemOp.write32(b.asInts().slice(0, 1), 1, WriteFlag.DEFAULT),
                                MemOp.write32(b.asInts().slice(1, 1), 2, WriteFlag.DEFAULT));
                        return () -> s.memOps().batch(ops);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuGraphAddBatchMemOpNode", "graph.addBatchMemOps(a write)", INVALID_VALUE,
                    w -> {
                        Graph g = w.open(w.ctx.createGraph());
                        DeviceBuffer b = w.buffer(256);
                        List<MemOp> ops = List.of(MemOp.write32(b.asInts().slice(0, 1), 1, WriteFlag.DEFAULT));
                        return () -> g.addBatchMemOps(ops);
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuMemHostGetDevicePointer_v2", "ctx.allocateMappedWord() (its mapped allocation is freed again)",
                    INVALID_VALUE,
                    w -> () -> w.open(w.ctx.allocateMappedWord()),
                    fails(CudaException.class), fails(CudaException.class)),

            // ---- Green contexts (SM partitions) ----
            call("cuDeviceGetDevResource", "device.partitionSms(64, 2)", INVALID_VALUE,
                    w -> () -> w.open(w.ctx.device().partitionSms(64, 2)),
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuDevSmResourceSplitByCount", "device.partitionSms(64, 2)", INVALID_VALUE,
                    w -> () -> w.open(w.ctx.device().partitionSms(64, 2)),
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuDevResourceGenerateDesc", "device.partitionSms(64, 2)", INVALID_VALUE,
                    w -> () -> w.open(w.ctx.device().partitionSms(64, 2)),
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuGreenCtxCreate", "device.partitionSms(64, 2)", OUT_OF_MEMORY,
                    w -> () -> w.open(w.ctx.device().partitionSms(64, 2)),
                    fails(CudaException.class), fails(CudaException.class).orphaning(Native.GREEN_CONTEXT)),
            call("cuCtxFromGreenCtx", "device.partitionSms(64, 2) (the green context made is destroyed again)",
                    INVALID_VALUE,
                    w -> () -> w.open(w.ctx.device().partitionSms(64, 2)),
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuGreenCtxStreamCreate", "greenContext.createStream()", OUT_OF_MEMORY,
                    w -> {
                        SmPartition p = w.open(w.ctx.device().partitionSms(64, 2));
                        return () -> w.open(p.group(0).createStream());
                    },
                    fails(CudaException.class), fails(CudaException.class).orphaning(Native.STREAM)
                            .flagging("cuGreenCtxDestroy while a stream")),
            call("cuGreenCtxDestroy", "partition.close() (each group's close destroys its green context)", INVALID_HANDLE,
                    w -> {
                        SmPartition p = w.ctx.device().partitionSms(64, 2);
                        return p::close;
                    },
                    fails(CudaException.class).orphaning(Native.GREEN_CONTEXT), fails(CudaException.class)),

            // ---- Kernel libraries ----
            call("cuLibraryLoadData", "ctx.loadLibrary(image)", INVALID_IMAGE,
                    w -> () -> w.open(w.ctx.loadLibrary(FaultWorld.IMAGE)),
                    fails(ImageRejectedException.class),
                    // A lazy load made the library, not yet its module (no context loaded it).
                    fails(ImageRejectedException.class).orphaning(Native.LIBRARY)),
            call("cuLibraryGetModule", "ctx.loadLibrary(image) (loads it into this context at once)", INVALID_CONTEXT,
                    w -> () -> w.open(w.ctx.loadLibrary(FaultWorld.IMAGE)),
                    fails(CudaException.class).and("the library is unloaded", FaultTable::noLibraryLoaded),
                    fails(CudaException.class).and("the library is unloaded", FaultTable::noLibraryLoaded)),
            call("cuLibraryGetKernel", "library.kernel(name)", INVALID_HANDLE,
                    w -> {
                        KernelLibrary lib = w.open(w.ctx.loadLibrary(FaultWorld.IMAGE));
                        return () -> w.open(lib.kernel(FaultWorld.KERNEL));
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuKernelGetFunction", "library.kernel(name, greenContext)", INVALID_HANDLE,
                    w -> {
                        SmPartition p = w.open(w.ctx.device().partitionSms(64, 2));
                        KernelLibrary lib = w.open(w.ctx.loadLibrary(FaultWorld.IMAGE));
                        return () -> w.open(lib.kernel(FaultWorld.KERNEL, p.group(1)));
                    },
                    fails(CudaException.class), fails(CudaException.class)),
            call("cuLibraryUnload", "library.close() (its retirement unloads it)", INVALID_HANDLE,
                    w -> {
                        KernelLibrary lib = w.ctx.loadLibrary(FaultWorld.IMAGE);
                        return lib::close;
                    },
                    givenUpAtOnce().orphaning(Native.LIBRARY).orphaning(Native.MODULE), givenUpAtOnce()));

    private FaultTable() {
    }

    private static FaultCase call(String function, String scenario, int error, Scenario setUp, Outcome before,
            Outcome after) {
        return new FaultCase(function, scenario, error, 1, 1, 13000, setUp, Outcome.SUCCEEDS, before, after);
    }

    /** {@code end.elapsedMillis(start)} after both were recorded on a stream. */
    private static Executable elapsed(FaultWorld w) {
        Stream s = w.stream();
        Event start = w.timingEvent();
        Event end = w.timingEvent();
        start.record(s);
        end.record(s);
        return () -> end.elapsedMillis(start);
    }

    /** The graph the scenario kept takes a conditional handle now: a refused lookup is not remembered. */
    private static void conditionalHandleWorks(FaultWorld w, Throwable e) {
        assertTrue(e.getMessage().contains("cuGetProcAddress_v2(\"cuGraphConditionalHandleCreate\", 12030) answered "
                + "CUDA_ERROR_INVALID_VALUE"), e.getMessage());
        w.kept(Graph.class).createConditionalHandle(1);
    }

    // ---- scenarios shared by several rows ----

    /**
     * A graph captured into a capture arena (a kernel over an arena buffer), replayed on the
     * context's compute stream; the call replays it on another stream, which must wait for that.
     */
    private static Executable arenaReplayOnAnotherStream(FaultWorld w) {
        Kernel k = w.kernel();
        Stream s = w.stream();
        CaptureArena arena = w.open(CaptureArena.reserve(w.ctx, 8 * MiB));
        arena.ensure(MiB);
        Graph graph;
        try (StreamCapture capture = arena.beginCapture(s, CaptureMode.THREAD_LOCAL)) {
            DeviceBuffer scratch = s.allocate(256);
            k.launch(s, LaunchConfig.of(1, 64), KernelArg.pointer(scratch), KernelArg.i32(64));
            scratch.close();
            graph = w.open(capture.end());
        }
        GraphExec exec = w.exec(graph);
        exec.launch(w.ctx.computeStream());
        return () -> exec.launch(s);
    }

    private static Executable nodeUpdate(FaultWorld w) {
        Kernel k = w.kernel();
        Stream s = w.stream();
        GraphExec exec = w.exec(w.graph(k, s));
        KernelLaunch arguments = w.launch(k, LaunchConfig.of(1, 64));
        return () -> exec.updateKernelNode(0, arguments);
    }

    // ---- recoveries ----

    /** A free or destroy that failed in retirement: retried at the next reap, which frees it. */
    private static Outcome retriedAndFreed() {
        return recovers("retirement retries the free at the next reap, which frees it", (w, e) -> {
            assertEquals(1, w.ctx.diagnostics().counters().pendingRetirements(), "the failed free waits for the next reap");
            LogCapture.expect(Level.WARN, RetirementQueue.class, "Freeing ", " failed with ", "; will retry at the next reap");
            w.ctx.reap();
            assertEquals(0, w.ctx.diagnostics().counters().pendingRetirements(), "freed by the retry");
            assertEquals(0, w.ctx.diagnostics().counters().failedRetirements());
        });
    }

    /**
     * A destroy the driver answered with {@code CUDA_ERROR_INVALID_HANDLE}: given up at once,
     * logged and counted in retirementsFailed, never retried (after the call, a retry would name
     * a destroyed handle). Injected before the call, the handle stays alive in the simulator, a
     * world no driver makes (it said the handle is not one), so the row names the kind it orphans.
     */
    private static Outcome givenUpAtOnce() {
        return recovers("given up at once: a destroy answered with CUDA_ERROR_INVALID_HANDLE is never retried",
                (w, e) -> {
                    assertEquals(0, w.ctx.diagnostics().counters().pendingRetirements(), "not queued for a retry");
                    assertEquals(1, w.ctx.diagnostics().counters().failedRetirements());
                    LogCapture.expect(Level.ERROR, RetirementQueue.class, "Leaking ", "CUDA_ERROR_INVALID_HANDLE",
                            "so it is never retried");
                });
    }

    /**
     * The free was made, then reported failed: every retry fails (the handle is gone), so the
     * handle is logged and given up after the last attempt, and counted in retirementsFailed.
     */
    private static Outcome retriedThenGivenUp() {
        return recovers("retried at later reaps; each retry fails, so it is logged and counted in retirementsFailed",
                (w, e) -> {
                    assertEquals(1, w.ctx.diagnostics().counters().pendingRetirements(), "the failed free waits for the next reap");
                    for (int i = 0; i < 5 && w.ctx.diagnostics().counters().pendingRetirements() > 0; i++) {
                        w.ctx.reap();
                    }
                    assertEquals(0, w.ctx.diagnostics().counters().pendingRetirements(), "given up");
                    assertEquals(1, w.ctx.diagnostics().counters().failedRetirements());
                    // Given up after the last attempt, or at once when a retry met CUDA_ERROR_INVALID_HANDLE.
                    LogCapture.expect(Level.ERROR, RetirementQueue.class, "Leaking ");
                });
    }

    /** After a failed onComplete: the driver queued {@code hostFunctions} host functions, and Gatun keeps no future. */
    private static void completionsSettled(FaultWorld w, long hostFunctions) {
        assertEquals(hostFunctions, w.sim.gpu.hostFunctionsQueued(), "host functions the driver queued");
        assertEquals(0, w.ctx.diagnostics().pendingCompletions(), "futures Gatun still waits for");
    }

    private static void noGraphAllocation(FaultWorld w, Throwable e) {
        assertEquals(0, w.ctx.diagnostics().graphAllocationCounters().allocations(), "a refused allocation node is no graph allocation");
    }

    private static void nothingPending(FaultWorld w, Throwable e) {
        assertEquals(0, w.ctx.diagnostics().counters().pendingRetirements(), "freed without waiting for another reap");
    }

    private static void freedAtTheNextReap(FaultWorld w, Throwable e) {
        assertEquals(1, w.ctx.diagnostics().counters().pendingRetirements(), "waits for its fence");
        w.ctx.reap();
        assertEquals(0, w.ctx.diagnostics().counters().pendingRetirements(), "freed once its fence reads complete");
    }

    private static void newCudaWorks(FaultWorld w, Throwable e) {
        assertEquals(w.sim.cuda.deviceCount(), FakeCuda.over(w.sim.gpu, w.sim.faults).deviceCount());
    }

    private static void noDescription(FaultWorld w, Throwable e) {
        assertEquals("", ((CudaException) e).description(), "no description when cuGetErrorString fails");
    }

    private static void noDriverLogWarned(FaultWorld w, Throwable e) {
        LogCapture.expect(Level.WARN, "dev.gatun.cuda.internal.driver.DriverLog",
                "cuLogsRegisterCallback failed with CUDA_ERROR_INVALID_VALUE; going on without the driver's error log");
    }

    private static void dumpsTurnOnLater(FaultWorld w, Throwable e) {
        w.open(w.sim.cuda.device(1).context(WITH_DUMPS));
        assertEquals(true, w.sim.gpu.coredumpSetting(w.sim.gpu.primaryContext(1),
                CudaDriver.CU_COREDUMP_ENABLE_ON_EXCEPTION()));
    }

    private static void secondContextOpens(FaultWorld w, Throwable e) {
        w.context(1).diagnostics().memoryInfo();
    }

    private static void peerAccessRetried(FaultWorld w, Throwable e) {
        CudaContext peer = w.sim.cuda.device(1).context(FaultWorld.OPTIONS);
        assertFalse(w.ctx.isPeerAccessEnabled(peer));
        w.ctx.enablePeerAccess(peer);
        assertTrue(w.ctx.isPeerAccessEnabled(peer));
    }

    private static void triedTwice(FaultWorld w, String function) {
        assertEquals(2, w.sim.faults.calls(function), "one failed allocation, one retry after the ladder's last rung");
        assertEquals(1, w.ctx.diagnostics().outOfMemoryCounters().rescuedBySynchronize());
    }

    private static void grownOnRetry(FaultWorld w, Throwable e) {
        GrowableBuffer g = w.kept(GrowableBuffer.class);
        assertEquals(MiB, g.byteSize());
        assertEquals(1, g.counters().mappedChunks());
        assertEquals(1, w.ctx.diagnostics().outOfMemoryCounters().rescuedBySynchronize());
    }

    private static void defaultPoolRetried(FaultWorld w, Throwable e) {
        assertEquals(0, w.kept(MemoryPool.class).releaseThresholdBytes());
    }

    private static void poolDestroyedAtClose(FaultWorld w, Throwable e) {
        MemoryPool p = w.kept(MemoryPool.class);
        p.close();
        assertEquals(0, w.sim.gpu.liveMemoryPools(), "destroyed at once: no allocation holds it");
    }

    private static void growableRetried(FaultWorld w, Throwable e) {
        GrowableBuffer g = w.kept(GrowableBuffer.class);
        assertEquals(0, g.byteSize());
        assertEquals(0, w.sim.gpu.liveMappings(), "the failed growth mapped nothing, or unmapped it again");
        g.grow(MiB);
        assertEquals(1, g.counters().mappedChunks());
    }

    private static void previousModuleStays(FaultWorld w, Throwable e) {
        assertEquals(1, w.ctx.modules().info(FaultWorld.MODULE).orElseThrow().generation());
        w.open(w.ctx.modules().kernel(FaultWorld.MODULE, FaultWorld.KERNEL));
    }

    /** A load that failed after the library was made unloads it at once: the driver keeps none. */
    private static void noLibraryLoaded(FaultWorld w, Throwable e) {
        assertEquals(0, w.sim.gpu.liveLibraries());
        assertEquals(0, w.ctx.diagnostics().liveOwners(OwnerKind.LIBRARY));
    }

    /** The failed transfer's buffer is fenced: its bytes are usable at once, and the next transfer through it works. */
    /** A batch of an upload from a kept pinned buffer into a kept device buffer, and a copy between two other buffers. */
    private static Executable batchScenario(FaultWorld w, CopyBatch.Submission submission) {
        Stream s = w.keep(w.stream());
        DeviceBuffer b = w.keep(w.buffer(4096));
        DeviceBuffer to = w.buffer(4096);
        DeviceBuffer from = w.buffer(4096);
        PinnedBuffer p = w.keep(w.pinned(4096));
        CopyBatch batch = w.open(CopyBatch.create(2, submission));
        return () -> batch.upload(b.bytes(), p, 0).copy(to.bytes(), from.bytes()).submit(s);
    }

    /**
     * Keeps a stream, a device buffer and a pinned buffer with an upload from it queued on another
     * stream (whose fence fails twice when {@code unfenced}: a transfer through it on the kept
     * stream then records a fresh one there first); returns a download into it on the kept stream.
     */
    private static Executable pinnedBehindAnotherStream(FaultWorld w, boolean unfenced) {
        Stream s = w.keep(w.stream());
        Stream other = w.stream();
        DeviceBuffer b = w.keep(w.buffer(4096));
        PinnedBuffer p = w.keep(w.pinned(4096));
        if (unfenced) {
            w.sim.faults.inject("cuEventRecord", INVALID_HANDLE, FaultPlan.Mode.REPLACE, 0, 2);
        }
        Throwable fenceFailed = null;
        try {
            other.upload(b.bytes(), p, 0);
        } catch (CudaException expected) {
            fenceFailed = expected;
        } finally {
            w.sim.faults.clear();
        }
        assertEquals(unfenced, fenceFailed != null, "the upload's fence failed only where the scenario made it fail");
        assertEquals(unfenced ? TransferState.UNFENCED : TransferState.EVENT_RECORDED, p.transferState());
        return () -> s.download(p, 0, b.bytes());
    }

    private static void pinnedUsable(FaultWorld w, Throwable e) {
        PinnedBuffer p = w.kept(PinnedBuffer.class);
        Stream s = w.kept(Stream.class);
        DeviceBuffer b = w.kept(DeviceBuffer.class);
        p.segment().fill((byte) 3);
        assertEquals(TransferState.COMPLETE, p.transferState());
        s.upload(b.bytes(), p, 0);
        assertFilled(b, (byte) 3, "the upload after the failed one");
    }

    /** Work queued on the kept stream runs (a stream left capturing would record it instead, silently). */
    /** After a failed conditional call on an open capture: it aborts, leaving the stream to run work. */
    private static void captureAbortsAndStreamRunsWork(FaultWorld w, Throwable e) {
        w.kept(StreamCapture.class).abort();
        streamRunsWork(w, e);
    }

    /**
     * After a conditional node whose capture dependency update failed: the graph it went into refuses
     * to be instantiated (later captured work would not wait for the node), and the capture aborts.
     */
    private static void capturedGraphRefusedThenAborted(FaultWorld w, Throwable e) {
        Graph graph = w.kept(ConditionalHandle.class).graph();
        IllegalStateException refused = assertThrows(IllegalStateException.class, graph::instantiate);
        assertTrue(refused.getMessage().contains("could not be made the capture's dependency"), refused.getMessage());
        w.kept(StreamCapture.class).abort();
        streamRunsWork(w, e);
    }

    private static void streamRunsWork(FaultWorld w, Throwable e) {
        Stream s = w.kept(Stream.class);
        DeviceBuffer b = w.buffer(256);
        s.memset(b.bytes(), (byte) 9);
        s.synchronize();
        assertFilled(b, (byte) 9, "the memset ran");
    }

    /** Every byte of {@code b} is {@code value}. */
    private static void assertFilled(DeviceBuffer b, byte value, String what) {
        byte[] expected = new byte[(int) b.byteSize()];
        Arrays.fill(expected, value);
        byte[] back = new byte[expected.length];
        b.bytes().copyTo(back);
        assertArrayEquals(expected, back, what);
    }

    /** A launch the driver rejected stays uncertain: it refuses to run while its stream is busy, and runs once it is idle. */
    private static void relaunchAfterIdle(FaultWorld w, Throwable e) {
        KernelLaunch l = w.kept(KernelLaunch.class);
        Stream s = w.kept(Stream.class);
        assertTrue(l.uncertainFailure().isPresent());
        assertThrows(IllegalStateException.class, () -> l.launch(s), "the failed launch may still be queued");
        w.sim.gpu.release(s.handle());
        l.launch(s);
        assertEquals(Optional.empty(), l.uncertainFailure());
    }
}
