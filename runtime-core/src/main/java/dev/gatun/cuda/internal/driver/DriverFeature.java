package dev.gatun.cuda.internal.driver;

import static dev.gatun.cuda.internal.driver.DriverFunction.*;

import dev.gatun.cuda.DriverTooOldException;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * What Gatun does with the driver, feature by feature, and the oldest driver each feature needs:
 * the one table that the code checks ({@link Driver#require}, {@link Driver#supports}) and that
 * gatun-core's README shows ("Which driver each feature needs", which {@code DriverFeatureTableTest}
 * renders from this enum and compares).
 *
 * <p>Every function of {@link DriverFunction} serves exactly one feature, and a feature needs at
 * least the version of each of its entry points; some need more, for something that is not an
 * entry point of its own (a launch attribute, a node type, a struct field), named by
 * {@link #need()}. Gatun refuses a driver older than 12.0 ({@link Driver#MINIMUM_VERSION}), so the
 * features at 12.0 work on every driver it accepts. A newer feature on an older driver either
 * fails with {@link DriverTooOldException} in the operation that needs it, and only there, or,
 * where Gatun has another way, takes it ({@link #fallback()}).
 */
public enum DriverFeature {

    INITIALIZATION("initialization and error strings", "every `Cuda`", 12000,
            cuInit, cuDriverGetVersion, cuGetProcAddress_v2, cuGetErrorString),
    DEVICES_AND_CONTEXTS("devices and contexts", "`Device`, `CudaContext`", 12000,
            cuDeviceGetCount, cuDeviceGet, cuDeviceGetName, cuDeviceGetAttribute, cuDeviceTotalMem_v2,
            cuDeviceGetPCIBusId, cuDeviceCanAccessPeer, cuDeviceGetP2PAttribute, cuDevicePrimaryCtxRetain,
            cuCtxSetCurrent, cuCtxGetCurrent, cuCtxSynchronize, cuCtxGetStreamPriorityRange, cuCtxEnablePeerAccess,
            cuCtxGetDevice, cuMemGetInfo_v2),
    STREAMS("streams and host functions", "`Stream`, `Stream.onComplete`", 12000,
            cuStreamCreateWithPriority, cuStreamDestroy_v2, cuStreamQuery, cuStreamSynchronize, cuStreamWaitEvent,
            cuStreamIsCapturing, cuStreamGetCtx, cuStreamGetPriority, cuLaunchHostFunc),
    EVENTS("events, and their timing", "`Event`, `Event.elapsedMillis`", 12000,
            cuEventCreate, cuEventDestroy_v2, cuEventRecord, cuEventQuery, cuEventSynchronize, cuEventElapsedTime),
    ELAPSED_TIME_V2("event timing through cuEventElapsedTime_v2", "`Event.elapsedMillis`", 12080,
            Older.fallback("`cuEventElapsedTime`, the same measure"), cuEventElapsedTime_v2),
    MEMORY("device and pinned memory, copies", "`DeviceBuffer`, `PinnedBuffer`, `Stream` copies", 12000,
            cuMemAlloc_v2, cuMemFree_v2, cuMemAllocAsync, cuMemFreeAsync, cuMemHostAlloc, cuMemFreeHost,
            cuMemsetD8Async, cuMemsetD32Async, cuMemcpyHtoDAsync_v2, cuMemcpyDtoHAsync_v2, cuMemcpyDtoDAsync_v2,
            cuMemcpyPeerAsync, cuPointerGetAttributes, cuMemcpyAsync),
    BATCHED_COPIES("batched copies in one driver call", "`CopyBatch`", 13000,
            Older.fallback("one `cuMemcpyAsync` per copy, in the same order"), cuMemcpyBatchAsync_v2),
    MEMORY_POOLS("memory pools", "`MemoryPool`", 12000,
            cuDeviceGetDefaultMemPool, cuMemPoolCreate, cuMemPoolDestroy, cuMemPoolSetAttribute,
            cuMemPoolGetAttribute, cuMemPoolTrimTo, cuMemPoolSetAccess, cuMemPoolGetAccess, cuMemAllocFromPoolAsync,
            cuMemPoolExportToShareableHandle, cuMemPoolImportFromShareableHandle, cuMemPoolExportPointer,
            cuMemPoolImportPointer),
    POOL_HARD_CAP("a memory pool's hard cap kept by the driver", "`MemoryPoolOptions.withHardCap`", 12020,
            Older.fallback("Gatun keeps the cap itself").needing("CUmemPoolProps.maxSize")),
    GRAPH_MEMORY("allocation inside stream captures", "allocations in a `StreamCapture`, `CaptureArena`", 12000,
            cuDeviceGraphMemTrim, cuDeviceGetGraphMemAttribute, cuDeviceSetGraphMemAttribute),
    IPC("sharing memory and events between processes", "`IpcBufferExport`, `IpcEventHandle`", 12000,
            cuIpcGetMemHandle, cuIpcOpenMemHandle_v2, cuIpcCloseMemHandle, cuIpcGetEventHandle, cuIpcOpenEventHandle),
    VIRTUAL_MEMORY("growable buffers (virtual memory)", "`GrowableBuffer`", 12000,
            cuMemGetAllocationGranularity, cuMemAddressReserve, cuMemAddressFree, cuMemCreate, cuMemRelease, cuMemMap,
            cuMemUnmap, cuMemSetAccess),
    MODULES_AND_LAUNCHES("modules, kernels and launches", "`ModuleRegistry`, `Kernel`, `KernelLaunch`", 12000,
            cuModuleLoadData, cuModuleUnload, cuModuleGetFunction, cuFuncGetAttribute, cuFuncSetAttribute,
            cuLaunchKernel, cuLaunchCooperativeKernel, cuLaunchKernelEx,
            cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags, cuOccupancyMaxPotentialBlockSizeWithFlags,
            cuOccupancyMaxActiveClusters),
    PARAMETER_INFO("a kernel's parameter layout", "`Kernel.parameters()`", 12040,
            Older.fallback("`Kernel.parameters()` is empty; launches are not checked against the parameters"),
            cuFuncGetParamInfo),
    LAUNCH_COMPLETION_EVENT("launch completion events", "`LaunchConfig.withLaunchCompletionEvent`", 12030,
            Older.refused("launch without withLaunchCompletionEvent, or record an event after the launch")
                    .needing("CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT")),
    KERNEL_LIBRARIES("kernel libraries", "`KernelLibrary`", 12000,
            cuLibraryLoadData, cuLibraryGetModule, cuLibraryGetKernel, cuKernelGetFunction, cuLibraryUnload),
    CAPTURE_AND_GRAPHS("stream capture, graphs and executables", "`StreamCapture`, `Graph`, `GraphExec`", 12000,
            cuStreamBeginCapture_v2, cuStreamEndCapture, cuGraphInstantiateWithFlags, cuGraphLaunch, cuGraphUpload,
            cuGraphDestroy, cuGraphExecDestroy, cuGraphExecUpdate_v2, cuGraphGetNodes, cuGraphNodeGetType,
            cuGraphKernelNodeGetParams_v2, cuGraphExecKernelNodeSetParams_v2),
    GRAPH_BUILDING("explicitly built graphs", "`Graph`'s `add…` methods", 12000,
            cuGraphCreate, cuGraphAddKernelNode_v2, cuGraphAddMemsetNode, cuGraphAddMemcpyNode, cuGraphClone,
            cuGraphDebugDotPrint, cuGraphNodeSetEnabled, cuGraphAddEventRecordNode, cuGraphAddEventWaitNode,
            cuGraphExecEventRecordNodeSetEvent, cuGraphExecEventWaitNodeSetEvent, cuGraphAddHostNode,
            cuGraphAddChildGraphNode, cuGraphDestroyNode),
    PROGRAMMATIC_EDGES("programmatic dependencies between graph nodes", "`Graph.addProgrammaticDependency`", 12030,
            cuGraphAddDependencies_v2),
    CONDITIONAL_NODES("conditional graph nodes (IF, WHILE)", "`Graph.createConditionalHandle`, `addIf`, `addWhile`",
            12030, cuGraphConditionalHandleCreate, cuGraphAddNode_v2),
    ELSE_AND_SWITCH("IF nodes with an ELSE body, and SWITCH nodes", "`addIfElse`, `addSwitch`", 12080,
            Older.refused("an IF node with an ELSE body, and a SWITCH node, came with CUDA 12.8")
                    .needing("cuGraphAddNode_v2 (IF with 2 bodies, SWITCH)")),
    CAPTURED_CONDITIONALS("conditional nodes inside a stream capture (capture into a body graph)",
            "`StreamCapture.createConditionalHandle`, `addIf`, `addWhile`", 12030,
            cuStreamGetCaptureInfo_v3, cuStreamUpdateCaptureDependencies_v2, cuStreamBeginCaptureToGraph),
    STREAM_MEMORY_OPERATIONS("stream memory operations and mapped words", "`Stream.memOps()`, `MappedWord`",
            12000, cuStreamWriteValue32_v2, cuStreamWriteValue64_v2, cuStreamWaitValue32_v2, cuStreamWaitValue64_v2,
            cuStreamBatchMemOp_v2, cuGraphAddBatchMemOpNode, cuMemHostGetDevicePointer_v2),
    GREEN_CONTEXTS("green contexts", "`Device.partitionSms`", 12050,
            cuDeviceGetDevResource, cuDevSmResourceSplitByCount, cuDevResourceGenerateDesc, cuGreenCtxCreate,
            cuCtxFromGreenCtx, cuGreenCtxStreamCreate, cuGreenCtxDestroy),
    GPU_COREDUMPS("GPU coredumps on sticky errors", "`ContextOptions.withCoredumps`", 12050,
            Older.refused("").needing("CU_COREDUMP_GENERATION_FLAGS"), cuCoredumpSetAttribute,
            cuCoredumpGetAttribute),
    DRIVER_LOG("the driver's error log in exceptions", "`CudaException.driverLog()`", 12090,
            Older.fallback("exceptions carry no driver log lines"), cuLogsRegisterCallback);

    /**
     * What a driver older than the feature's minimum gets.
     *
     * @param fallback what Gatun does instead, or null when the operation fails with {@link DriverTooOldException}
     * @param advice for such an exception: what to do instead ("" for nothing)
     * @param need what the feature needs that is not an entry point of its own, or null
     */
    record Older(String fallback, String advice, String need) {
        static final Older REFUSED = new Older(null, "", null);

        static Older fallback(String instead) {
            return new Older(instead, "", null);
        }

        static Older refused(String advice) {
            return new Older(null, advice, null);
        }

        Older needing(String what) {
            return new Older(fallback, advice, what);
        }
    }

    private static final Map<DriverFunction, DriverFeature> OF = new EnumMap<>(DriverFunction.class);

    static {
        for (DriverFeature feature : values()) {
            for (DriverFunction f : feature.entryPoints) {
                OF.putIfAbsent(f, feature);
            }
        }
    }

    private final String title;
    private final String api;
    private final int minimum;
    private final Older older;
    private final List<DriverFunction> entryPoints;

    DriverFeature(String title, String api, int minimum, DriverFunction... entryPoints) {
        this(title, api, minimum, Older.REFUSED, entryPoints);
    }

    DriverFeature(String title, String api, int minimum, Older older, DriverFunction... entryPoints) {
        this.title = title;
        this.api = api;
        this.minimum = minimum;
        this.older = older;
        this.entryPoints = List.of(entryPoints);
    }

    /** {@return the feature {@code function} serves} */
    public static DriverFeature of(DriverFunction function) {
        return OF.get(function);
    }

    /** {@return what the feature is, for messages and the README, e.g. "green contexts"} */
    public String title() {
        return title;
    }

    /** {@return where users meet it in Gatun's API, for the README (Markdown)} */
    public String api() {
        return api;
    }

    /** {@return the oldest driver it works on, in CUDA's encoding (1000 * major + 10 * minor)} */
    public int minimum() {
        return minimum;
    }

    /** {@return the driver functions it calls} */
    public List<DriverFunction> entryPoints() {
        return entryPoints;
    }

    /** {@return what Gatun does instead on an older driver (Markdown), or null when the operation fails} */
    public String fallback() {
        return older.fallback();
    }

    /** {@return what it needs that is not an entry point of its own (a launch attribute, a struct field), or null} */
    public String need() {
        return older.need();
    }

    /**
     * The exception for this feature on a driver for CUDA {@code installed}, older than
     * {@link #minimum()}: it names the first of its entry points the driver is too old for, or what
     * else it needs.
     */
    DriverTooOldException tooOld(int installed) {
        String missing = entryPoints.stream().filter(f -> f.version() > installed).map(Enum::name).findFirst()
                .orElse(older.need());
        return new DriverTooOldException(title, missing, minimum, installed, older.advice());
    }
}
