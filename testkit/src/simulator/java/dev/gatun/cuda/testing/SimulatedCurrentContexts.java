package dev.gatun.cuda.testing;

import static dev.gatun.cuda.testing.FakeDriverApi.SUCCESS;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;

/**
 * The simulated driver's current contexts, one per carrier thread, and the refusal of a call
 * made under the wrong one.
 *
 * <p>CUDA's current context belongs to the OS thread. A call runs on the OS thread it began on:
 * for a virtual thread, the carrier it was mounted on when it made the call, which a real
 * downcall pins until it returns ({@link Carriers#current()}, read before the simulated driver's
 * lock, whose wait could move a virtual thread). {@code cuCtxSetCurrent} and
 * {@code cuCtxGetCurrent} act on that carrier's slot, not on the virtual thread.
 *
 * <p>A call that acts on the current context (it creates into it, frees from it, or answers for
 * it: the table below) fails with {@code CUDA_ERROR_INVALID_CONTEXT} when no context is
 * current on its carrier, or when the handle it names belongs to another context (a stream, a
 * device allocation, an event, a module), and the driver logs why. These are the calls Gatun's
 * checked layer makes the context current for (DriverCalls' table); the calls that name a stream
 * or event act in that handle's context whatever is current, and are not checked. Each refusal
 * is also kept ({@link FakeDriverApi#contextRefusals()}): a test of Gatun asserts there were none.
 */
final class SimulatedCurrentContexts {

    /** What a context-dependent call names, whose context must be the current one. */
    private enum Names {
        /** Nothing of one context: any context will do. */
        NOTHING(""),
        /** A stream, its first argument. */
        STREAM("stream"),
        /** A device allocation, its first argument (a mapping of another's allocation is not checked). */
        ALLOCATION("device allocation"),
        /** An event, its first argument. */
        EVENT("event"),
        /** A module, its first argument. */
        MODULE("module"),
        /** A module, its second argument ({@code cuModuleGetFunction}). */
        MODULE_SECOND("module");

        final String what;

        Names(String what) {
            this.what = what;
        }
    }

    /** The functions that act on the calling thread's current context, and what each names. */
    private static final Map<String, Names> ON_CURRENT = onCurrent();

    /** The functions that create a handle of the current context, written to their first argument. */
    private static final Set<String> CREATE_IN_CURRENT = Set.of("cuEventCreate", "cuIpcOpenEventHandle", "cuModuleLoadData");

    private static Map<String, Names> onCurrent() {
        Map<String, Names> m = new HashMap<>();
        for (String f : List.of(
                // the context itself, and creations into it
                "cuCtxSynchronize", "cuCtxGetStreamPriorityRange", "cuCtxEnablePeerAccess", "cuCtxGetDevice",
                "cuMemGetInfo_v2", "cuMemAlloc_v2", "cuMemHostAlloc", "cuMemHostGetDevicePointer_v2",
                "cuStreamCreateWithPriority", "cuEventCreate", "cuModuleLoadData", "cuKernelGetFunction",
                "cuLibraryGetModule",
                "cuCoredumpGetAttribute", "cuCoredumpSetAttribute",
                // functions, and what a kernel may do on the device
                "cuFuncGetAttribute", "cuFuncSetAttribute", "cuFuncGetParamInfo",
                "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", "cuOccupancyMaxPotentialBlockSizeWithFlags",
                "cuOccupancyMaxActiveClusters",
                // pinned memory (portable: any context frees it)
                "cuMemFreeHost",
                // graphs: building, instantiating, updating, destroying
                "cuGraphCreate", "cuGraphClone", "cuGraphDestroy", "cuGraphDestroyNode", "cuGraphDebugDotPrint",
                "cuGraphAddKernelNode_v2", "cuGraphAddMemsetNode", "cuGraphAddMemcpyNode", "cuGraphAddHostNode",
                "cuGraphAddEventRecordNode", "cuGraphAddEventWaitNode", "cuGraphAddChildGraphNode",
                "cuGraphAddBatchMemOpNode", "cuGraphAddDependencies_v2", "cuGraphAddNode_v2",
                "cuGraphConditionalHandleCreate", "cuGraphGetNodes", "cuGraphNodeGetType", "cuGraphKernelNodeGetParams_v2",
                "cuGraphInstantiateWithFlags", "cuGraphExecUpdate_v2", "cuGraphExecKernelNodeSetParams_v2",
                "cuGraphExecEventRecordNodeSetEvent", "cuGraphExecEventWaitNodeSetEvent", "cuGraphNodeSetEnabled",
                "cuGraphExecDestroy", "cuDeviceGraphMemTrim", "cuDeviceGetGraphMemAttribute",
                "cuDeviceSetGraphMemAttribute",
                // memory pools, IPC, virtual memory
                "cuDeviceGetDefaultMemPool", "cuMemPoolCreate", "cuMemPoolDestroy", "cuMemPoolGetAttribute",
                "cuMemPoolSetAttribute", "cuMemPoolTrimTo", "cuMemPoolSetAccess", "cuMemPoolGetAccess",
                "cuMemPoolExportToShareableHandle", "cuMemPoolImportFromShareableHandle", "cuMemPoolExportPointer",
                "cuMemPoolImportPointer", "cuIpcGetMemHandle", "cuIpcOpenMemHandle_v2", "cuIpcOpenEventHandle",
                "cuIpcCloseMemHandle", "cuMemGetAllocationGranularity", "cuMemAddressReserve", "cuMemAddressFree",
                "cuMemCreate", "cuMemRelease", "cuMemMap", "cuMemUnmap", "cuMemSetAccess")) {
            m.put(f, Names.NOTHING);
        }
        for (String f : List.of("cuStreamDestroy_v2", "cuStreamBeginCapture_v2", "cuStreamEndCapture",
                "cuStreamBeginCaptureToGraph", "cuStreamGetCaptureInfo_v3", "cuStreamUpdateCaptureDependencies_v2")) {
            m.put(f, Names.STREAM);
        }
        m.put("cuMemFree_v2", Names.ALLOCATION);
        m.put("cuEventDestroy_v2", Names.EVENT);
        m.put("cuModuleUnload", Names.MODULE);
        m.put("cuModuleGetFunction", Names.MODULE_SECOND);
        return Map.copyOf(m);
    }

    private final FakeDriverApi gpu;
    /** Each carrier's current context (absent: none); weak, so carriers that ended are forgotten. */
    private final Map<Thread, Long> byCarrier = new WeakHashMap<>();
    /** The carriers of the calls in progress, innermost first (a call nests in another through a callback). */
    private final ArrayDeque<Thread> calls = new ArrayDeque<>();
    /** The context of each event and module handle, as current when it was created (handles are never reused). */
    private final Map<Long, Long> owners = new HashMap<>();
    final List<String> refusals = new ArrayList<>();

    SimulatedCurrentContexts(FakeDriverApi gpu) {
        this.gpu = gpu;
    }

    public int cuCtxSetCurrent(MemorySegment ctx) {
        if (ctx.address() == 0) {
            byCarrier.remove(carrier());
        } else {
            byCarrier.put(carrier(), ctx.address());
        }
        return SUCCESS;
    }

    public int cuCtxGetCurrent(MemorySegment pctx) {
        pctx.set(ValueLayout.JAVA_LONG, 0, current());
        return SUCCESS;
    }

    /** The context current on the carrier of the call in progress (0: none). */
    long current() {
        return currentOn(carrier());
    }

    /** The context current on {@code carrier} (0: none). */
    long currentOn(Thread carrier) {
        return byCarrier.getOrDefault(carrier, 0L);
    }

    /**
     * The carrier that owns a capture begun now in {@code mode} ({@code CU_STREAM_CAPTURE_MODE_*}):
     * the calling one for a global or thread-local capture, which only it may end; null for a
     * relaxed one, which any thread may end.
     */
    Thread captureOwner(int mode) {
        return mode == CudaDriver.CU_STREAM_CAPTURE_MODE_RELAXED() ? null : carrier();
    }

    /** The carrier of the call in progress; outside a call (a test control), the caller's own. */
    Thread carrier() {
        Thread c = calls.peek();
        return c != null ? c : Carriers.current();
    }

    /**
     * A call of {@code function} begins on {@code carrier}: 0 to make it, or
     * {@code CUDA_ERROR_INVALID_CONTEXT} when it acts on the current context and the carrier has
     * none, or another than the one its handle belongs to. Pair with {@link #ends}.
     */
    int begins(Thread carrier, String function, Object[] args) {
        calls.push(carrier);
        Names names = ON_CURRENT.get(function);
        if (names == null) {
            return SUCCESS;
        }
        long current = current();
        if (gpu.devices.deviceOf(current) < 0) {
            return refuse(function, "no context is current on thread '" + carrier.getName() + "'");
        }
        long owner = ownerOf(names, args);
        if (owner != 0 && owner != current) {
            return refuse(function, "it names a " + names.what + " of context 0x"
                    + Long.toHexString(owner) + ", but context 0x" + Long.toHexString(current)
                    + " is current on thread '" + carrier.getName() + "'");
        }
        return SUCCESS;
    }

    /** The call {@link #begins} announced returned {@code result} (null when it threw). */
    void ends(String function, Object[] args, Object result) {
        Thread carrier = calls.pop();
        if (CREATE_IN_CURRENT.contains(function) && Integer.valueOf(SUCCESS).equals(result)) {
            owners.put(((MemorySegment) args[0]).get(ValueLayout.JAVA_LONG, 0), currentOn(carrier));
        }
    }

    /** The context the handle a call names belongs to; 0 when it names none, or one this does not know. */
    private long ownerOf(Names names, Object[] args) {
        return switch (names) {
            case NOTHING -> 0;
            case STREAM -> {
                SimulatedStreams.Stream s = gpu.streams.stream(((MemorySegment) args[0]).address());
                yield s == null ? 0 : s.context;
            }
            case ALLOCATION -> {
                SimulatedMemory.Allocation a = gpu.memory.device.get((Long) args[0]);
                yield a == null || a.mapped != null ? 0 : a.context;
            }
            case EVENT, MODULE -> owners.getOrDefault(((MemorySegment) args[0]).address(), 0L);
            case MODULE_SECOND -> owners.getOrDefault(((MemorySegment) args[1]).address(), 0L);
        };
    }

    private int refuse(String function, String why) {
        refusals.add(function + ": " + why);
        gpu.logs.refused(function, why);
        return CudaDriver.CUDA_ERROR_INVALID_CONTEXT();
    }
}
