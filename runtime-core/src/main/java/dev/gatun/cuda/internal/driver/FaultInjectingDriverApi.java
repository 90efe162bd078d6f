package dev.gatun.cuda.internal.driver;

import java.lang.foreign.MemorySegment;

/**
 * The fault-injection seam: wraps any {@link DriverApi} (the real driver on a GPU, a simulated
 * one on a CPU) and makes chosen calls return chosen results, as planned in {@link FaultPlan}.
 * A call the plan replaces is not made; a call it overrides is made and its result replaced,
 * which is how a test produces an "uncertain" submission: the work was queued, the caller was
 * told it failed.
 */
public final class FaultInjectingDriverApi implements DriverApi {

    private final DriverApi next;
    private final FaultPlan plan;

    public FaultInjectingDriverApi(DriverApi next, FaultPlan plan) {
        this.next = next;
        this.plan = plan;
    }

    public FaultPlan plan() {
        return plan;
    }

    @Override
    public boolean hasSymbol(String name) {
        return next.hasSymbol(name);
    }

    @Override
    public int cuInit(int Flags) {
        int injected = plan.before("cuInit");
        return injected != FaultPlan.PASS ? injected : plan.after("cuInit", next.cuInit(Flags));
    }

    @Override
    public int cuDriverGetVersion(MemorySegment driverVersion) {
        int injected = plan.before("cuDriverGetVersion");
        return injected != FaultPlan.PASS ? injected : plan.after("cuDriverGetVersion", next.cuDriverGetVersion(driverVersion));
    }

    @Override
    public int cuGetErrorName(int error, MemorySegment pStr) {
        int injected = plan.before("cuGetErrorName");
        return injected != FaultPlan.PASS ? injected : plan.after("cuGetErrorName", next.cuGetErrorName(error, pStr));
    }

    @Override
    public int cuGetErrorString(int error, MemorySegment pStr) {
        int injected = plan.before("cuGetErrorString");
        return injected != FaultPlan.PASS ? injected : plan.after("cuGetErrorString", next.cuGetErrorString(error, pStr));
    }

    @Override
    public int cuDeviceGetCount(MemorySegment count) {
        int injected = plan.before("cuDeviceGetCount");
        return injected != FaultPlan.PASS ? injected : plan.after("cuDeviceGetCount", next.cuDeviceGetCount(count));
    }

    @Override
    public int cuDeviceGet(MemorySegment device, int ordinal) {
        int injected = plan.before("cuDeviceGet");
        return injected != FaultPlan.PASS ? injected : plan.after("cuDeviceGet", next.cuDeviceGet(device, ordinal));
    }

    @Override
    public int cuDeviceGetName(MemorySegment name, int len, int dev) {
        int injected = plan.before("cuDeviceGetName");
        return injected != FaultPlan.PASS ? injected : plan.after("cuDeviceGetName", next.cuDeviceGetName(name, len, dev));
    }

    @Override
    public int cuDeviceGetAttribute(MemorySegment pi, int attrib, int dev) {
        int injected = plan.before("cuDeviceGetAttribute");
        return injected != FaultPlan.PASS ? injected : plan.after("cuDeviceGetAttribute", next.cuDeviceGetAttribute(pi, attrib, dev));
    }

    @Override
    public int cuDeviceTotalMem_v2(MemorySegment bytes, int dev) {
        int injected = plan.before("cuDeviceTotalMem_v2");
        return injected != FaultPlan.PASS ? injected : plan.after("cuDeviceTotalMem_v2", next.cuDeviceTotalMem_v2(bytes, dev));
    }

    @Override
    public int cuDeviceGetPCIBusId(MemorySegment pciBusId, int len, int dev) {
        int injected = plan.before("cuDeviceGetPCIBusId");
        return injected != FaultPlan.PASS ? injected : plan.after("cuDeviceGetPCIBusId", next.cuDeviceGetPCIBusId(pciBusId, len, dev));
    }

    @Override
    public int cuDeviceCanAccessPeer(MemorySegment canAccessPeer, int dev, int peerDev) {
        int injected = plan.before("cuDeviceCanAccessPeer");
        return injected != FaultPlan.PASS ? injected : plan.after("cuDeviceCanAccessPeer", next.cuDeviceCanAccessPeer(canAccessPeer, dev, peerDev));
    }

    @Override
    public int cuDeviceGetP2PAttribute(MemorySegment value, int attrib, int srcDevice, int dstDevice) {
        int injected = plan.before("cuDeviceGetP2PAttribute");
        return injected != FaultPlan.PASS ? injected : plan.after("cuDeviceGetP2PAttribute", next.cuDeviceGetP2PAttribute(value, attrib, srcDevice, dstDevice));
    }

    @Override
    public int cuDevicePrimaryCtxRetain(MemorySegment pctx, int dev) {
        int injected = plan.before("cuDevicePrimaryCtxRetain");
        return injected != FaultPlan.PASS ? injected : plan.after("cuDevicePrimaryCtxRetain", next.cuDevicePrimaryCtxRetain(pctx, dev));
    }

    @Override
    public int cuCtxSetCurrent(MemorySegment ctx) {
        int injected = plan.before("cuCtxSetCurrent");
        return injected != FaultPlan.PASS ? injected : plan.after("cuCtxSetCurrent", next.cuCtxSetCurrent(ctx));
    }

    @Override
    public int cuCtxGetCurrent(MemorySegment pctx) {
        int injected = plan.before("cuCtxGetCurrent");
        return injected != FaultPlan.PASS ? injected : plan.after("cuCtxGetCurrent", next.cuCtxGetCurrent(pctx));
    }

    @Override
    public int cuCtxSynchronize() {
        int injected = plan.before("cuCtxSynchronize");
        return injected != FaultPlan.PASS ? injected : plan.after("cuCtxSynchronize", next.cuCtxSynchronize());
    }

    @Override
    public int cuCtxGetStreamPriorityRange(MemorySegment leastPriority, MemorySegment greatestPriority) {
        int injected = plan.before("cuCtxGetStreamPriorityRange");
        return injected != FaultPlan.PASS ? injected : plan.after("cuCtxGetStreamPriorityRange", next.cuCtxGetStreamPriorityRange(leastPriority, greatestPriority));
    }

    @Override
    public int cuCtxEnablePeerAccess(MemorySegment peerContext, int Flags) {
        int injected = plan.before("cuCtxEnablePeerAccess");
        return injected != FaultPlan.PASS ? injected : plan.after("cuCtxEnablePeerAccess", next.cuCtxEnablePeerAccess(peerContext, Flags));
    }

    @Override
    public int cuMemGetInfo_v2(MemorySegment free, MemorySegment total) {
        int injected = plan.before("cuMemGetInfo_v2");
        return injected != FaultPlan.PASS ? injected : plan.after("cuMemGetInfo_v2", next.cuMemGetInfo_v2(free, total));
    }

    @Override
    public int cuStreamCreateWithPriority(MemorySegment phStream, int flags, int priority) {
        int injected = plan.before("cuStreamCreateWithPriority");
        return injected != FaultPlan.PASS ? injected : plan.after("cuStreamCreateWithPriority", next.cuStreamCreateWithPriority(phStream, flags, priority));
    }

    @Override
    public int cuStreamDestroy_v2(MemorySegment hStream) {
        int injected = plan.before("cuStreamDestroy_v2");
        return injected != FaultPlan.PASS ? injected : plan.after("cuStreamDestroy_v2", next.cuStreamDestroy_v2(hStream));
    }

    @Override
    public int cuStreamQuery(MemorySegment hStream) {
        int injected = plan.before("cuStreamQuery");
        return injected != FaultPlan.PASS ? injected : plan.after("cuStreamQuery", next.cuStreamQuery(hStream));
    }

    @Override
    public int cuStreamSynchronize(MemorySegment hStream) {
        int injected = plan.before("cuStreamSynchronize");
        return injected != FaultPlan.PASS ? injected : plan.after("cuStreamSynchronize", next.cuStreamSynchronize(hStream));
    }

    @Override
    public int cuStreamWaitEvent(MemorySegment hStream, MemorySegment hEvent, int Flags) {
        int injected = plan.before("cuStreamWaitEvent");
        return injected != FaultPlan.PASS ? injected : plan.after("cuStreamWaitEvent", next.cuStreamWaitEvent(hStream, hEvent, Flags));
    }

    @Override
    public int cuStreamIsCapturing(MemorySegment hStream, MemorySegment captureStatus) {
        int injected = plan.before("cuStreamIsCapturing");
        return injected != FaultPlan.PASS ? injected : plan.after("cuStreamIsCapturing", next.cuStreamIsCapturing(hStream, captureStatus));
    }

    @Override
    public int cuStreamGetPriority(MemorySegment hStream, MemorySegment priority) {
        int injected = plan.before("cuStreamGetPriority");
        return injected != FaultPlan.PASS ? injected : plan.after("cuStreamGetPriority", next.cuStreamGetPriority(hStream, priority));
    }

    @Override
    public int cuEventCreate(MemorySegment phEvent, int Flags) {
        int injected = plan.before("cuEventCreate");
        return injected != FaultPlan.PASS ? injected : plan.after("cuEventCreate", next.cuEventCreate(phEvent, Flags));
    }

    @Override
    public int cuEventDestroy_v2(MemorySegment hEvent) {
        int injected = plan.before("cuEventDestroy_v2");
        return injected != FaultPlan.PASS ? injected : plan.after("cuEventDestroy_v2", next.cuEventDestroy_v2(hEvent));
    }

    @Override
    public int cuEventRecord(MemorySegment hEvent, MemorySegment hStream) {
        int injected = plan.before("cuEventRecord");
        return injected != FaultPlan.PASS ? injected : plan.after("cuEventRecord", next.cuEventRecord(hEvent, hStream));
    }

    @Override
    public int cuEventQuery(MemorySegment hEvent) {
        int injected = plan.before("cuEventQuery");
        return injected != FaultPlan.PASS ? injected : plan.after("cuEventQuery", next.cuEventQuery(hEvent));
    }

    @Override
    public int cuEventSynchronize(MemorySegment hEvent) {
        int injected = plan.before("cuEventSynchronize");
        return injected != FaultPlan.PASS ? injected : plan.after("cuEventSynchronize", next.cuEventSynchronize(hEvent));
    }

    @Override
    public int cuEventElapsedTime_v2(MemorySegment pMilliseconds, MemorySegment hStart, MemorySegment hEnd) {
        int injected = plan.before("cuEventElapsedTime_v2");
        return injected != FaultPlan.PASS ? injected : plan.after("cuEventElapsedTime_v2", next.cuEventElapsedTime_v2(pMilliseconds, hStart, hEnd));
    }

    @Override
    public int cuMemAlloc_v2(MemorySegment dptr, long bytesize) {
        int injected = plan.before("cuMemAlloc_v2");
        return injected != FaultPlan.PASS ? injected : plan.after("cuMemAlloc_v2", next.cuMemAlloc_v2(dptr, bytesize));
    }

    @Override
    public int cuMemFree_v2(long dptr) {
        int injected = plan.before("cuMemFree_v2");
        return injected != FaultPlan.PASS ? injected : plan.after("cuMemFree_v2", next.cuMemFree_v2(dptr));
    }

    @Override
    public int cuMemAllocAsync(MemorySegment dptr, long bytesize, MemorySegment hStream) {
        int injected = plan.before("cuMemAllocAsync");
        return injected != FaultPlan.PASS ? injected : plan.after("cuMemAllocAsync", next.cuMemAllocAsync(dptr, bytesize, hStream));
    }

    @Override
    public int cuMemFreeAsync(long dptr, MemorySegment hStream) {
        int injected = plan.before("cuMemFreeAsync");
        return injected != FaultPlan.PASS ? injected : plan.after("cuMemFreeAsync", next.cuMemFreeAsync(dptr, hStream));
    }

    @Override
    public int cuMemHostAlloc(MemorySegment pp, long bytesize, int Flags) {
        int injected = plan.before("cuMemHostAlloc");
        return injected != FaultPlan.PASS ? injected : plan.after("cuMemHostAlloc", next.cuMemHostAlloc(pp, bytesize, Flags));
    }

    @Override
    public int cuMemFreeHost(MemorySegment p) {
        int injected = plan.before("cuMemFreeHost");
        return injected != FaultPlan.PASS ? injected : plan.after("cuMemFreeHost", next.cuMemFreeHost(p));
    }

    @Override
    public int cuMemsetD8_v2(long dstDevice, byte uc, long N) {
        int injected = plan.before("cuMemsetD8_v2");
        return injected != FaultPlan.PASS ? injected : plan.after("cuMemsetD8_v2", next.cuMemsetD8_v2(dstDevice, uc, N));
    }

    @Override
    public int cuMemsetD8Async(long dstDevice, byte uc, long N, MemorySegment hStream) {
        int injected = plan.before("cuMemsetD8Async");
        return injected != FaultPlan.PASS ? injected : plan.after("cuMemsetD8Async", next.cuMemsetD8Async(dstDevice, uc, N, hStream));
    }

    @Override
    public int cuMemsetD32_v2(long dstDevice, int ui, long N) {
        int injected = plan.before("cuMemsetD32_v2");
        return injected != FaultPlan.PASS ? injected : plan.after("cuMemsetD32_v2", next.cuMemsetD32_v2(dstDevice, ui, N));
    }

    @Override
    public int cuMemsetD32Async(long dstDevice, int ui, long N, MemorySegment hStream) {
        int injected = plan.before("cuMemsetD32Async");
        return injected != FaultPlan.PASS ? injected : plan.after("cuMemsetD32Async", next.cuMemsetD32Async(dstDevice, ui, N, hStream));
    }

    @Override
    public int cuMemcpyHtoD_v2(long dstDevice, MemorySegment srcHost, long ByteCount) {
        int injected = plan.before("cuMemcpyHtoD_v2");
        return injected != FaultPlan.PASS ? injected : plan.after("cuMemcpyHtoD_v2", next.cuMemcpyHtoD_v2(dstDevice, srcHost, ByteCount));
    }

    @Override
    public int cuMemcpyDtoH_v2(MemorySegment dstHost, long srcDevice, long ByteCount) {
        int injected = plan.before("cuMemcpyDtoH_v2");
        return injected != FaultPlan.PASS ? injected : plan.after("cuMemcpyDtoH_v2", next.cuMemcpyDtoH_v2(dstHost, srcDevice, ByteCount));
    }

    @Override
    public int cuMemcpyDtoD_v2(long dstDevice, long srcDevice, long ByteCount) {
        int injected = plan.before("cuMemcpyDtoD_v2");
        return injected != FaultPlan.PASS ? injected : plan.after("cuMemcpyDtoD_v2", next.cuMemcpyDtoD_v2(dstDevice, srcDevice, ByteCount));
    }

    @Override
    public int cuMemcpyHtoDAsync_v2(long dstDevice, MemorySegment srcHost, long ByteCount, MemorySegment hStream) {
        int injected = plan.before("cuMemcpyHtoDAsync_v2");
        return injected != FaultPlan.PASS ? injected : plan.after("cuMemcpyHtoDAsync_v2", next.cuMemcpyHtoDAsync_v2(dstDevice, srcHost, ByteCount, hStream));
    }

    @Override
    public int cuMemcpyDtoHAsync_v2(MemorySegment dstHost, long srcDevice, long ByteCount, MemorySegment hStream) {
        int injected = plan.before("cuMemcpyDtoHAsync_v2");
        return injected != FaultPlan.PASS ? injected : plan.after("cuMemcpyDtoHAsync_v2", next.cuMemcpyDtoHAsync_v2(dstHost, srcDevice, ByteCount, hStream));
    }

    @Override
    public int cuMemcpyDtoDAsync_v2(long dstDevice, long srcDevice, long ByteCount, MemorySegment hStream) {
        int injected = plan.before("cuMemcpyDtoDAsync_v2");
        return injected != FaultPlan.PASS ? injected : plan.after("cuMemcpyDtoDAsync_v2", next.cuMemcpyDtoDAsync_v2(dstDevice, srcDevice, ByteCount, hStream));
    }

    @Override
    public int cuMemcpyPeer(long dstDevice, MemorySegment dstContext, long srcDevice, MemorySegment srcContext, long ByteCount) {
        int injected = plan.before("cuMemcpyPeer");
        return injected != FaultPlan.PASS ? injected : plan.after("cuMemcpyPeer", next.cuMemcpyPeer(dstDevice, dstContext, srcDevice, srcContext, ByteCount));
    }

    @Override
    public int cuMemcpyPeerAsync(long dstDevice, MemorySegment dstContext, long srcDevice, MemorySegment srcContext, long ByteCount, MemorySegment hStream) {
        int injected = plan.before("cuMemcpyPeerAsync");
        return injected != FaultPlan.PASS ? injected : plan.after("cuMemcpyPeerAsync", next.cuMemcpyPeerAsync(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream));
    }

    @Override
    public int cuModuleLoadData(MemorySegment module, MemorySegment image) {
        int injected = plan.before("cuModuleLoadData");
        return injected != FaultPlan.PASS ? injected : plan.after("cuModuleLoadData", next.cuModuleLoadData(module, image));
    }

    @Override
    public int cuModuleUnload(MemorySegment hmod) {
        int injected = plan.before("cuModuleUnload");
        return injected != FaultPlan.PASS ? injected : plan.after("cuModuleUnload", next.cuModuleUnload(hmod));
    }

    @Override
    public int cuModuleGetFunction(MemorySegment hfunc, MemorySegment hmod, MemorySegment name) {
        int injected = plan.before("cuModuleGetFunction");
        return injected != FaultPlan.PASS ? injected : plan.after("cuModuleGetFunction", next.cuModuleGetFunction(hfunc, hmod, name));
    }

    @Override
    public int cuFuncGetAttribute(MemorySegment pi, int attrib, MemorySegment hfunc) {
        int injected = plan.before("cuFuncGetAttribute");
        return injected != FaultPlan.PASS ? injected : plan.after("cuFuncGetAttribute", next.cuFuncGetAttribute(pi, attrib, hfunc));
    }

    @Override
    public int cuFuncSetAttribute(MemorySegment hfunc, int attrib, int value) {
        int injected = plan.before("cuFuncSetAttribute");
        return injected != FaultPlan.PASS ? injected : plan.after("cuFuncSetAttribute", next.cuFuncSetAttribute(hfunc, attrib, value));
    }

    @Override
    public int cuFuncGetParamInfo(MemorySegment func, long paramIndex, MemorySegment paramOffset, MemorySegment paramSize) {
        int injected = plan.before("cuFuncGetParamInfo");
        return injected != FaultPlan.PASS ? injected : plan.after("cuFuncGetParamInfo", next.cuFuncGetParamInfo(func, paramIndex, paramOffset, paramSize));
    }

    @Override
    public int cuLaunchKernel(MemorySegment f, int gridDimX, int gridDimY, int gridDimZ, int blockDimX, int blockDimY, int blockDimZ, int sharedMemBytes, MemorySegment hStream, MemorySegment kernelParams, MemorySegment extra) {
        int injected = plan.before("cuLaunchKernel");
        return injected != FaultPlan.PASS ? injected : plan.after("cuLaunchKernel", next.cuLaunchKernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams, extra));
    }

    @Override
    public int cuLaunchCooperativeKernel(MemorySegment f, int gridDimX, int gridDimY, int gridDimZ, int blockDimX, int blockDimY, int blockDimZ, int sharedMemBytes, MemorySegment hStream, MemorySegment kernelParams) {
        int injected = plan.before("cuLaunchCooperativeKernel");
        return injected != FaultPlan.PASS ? injected : plan.after("cuLaunchCooperativeKernel", next.cuLaunchCooperativeKernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams));
    }

    @Override
    public int cuLaunchKernelEx(MemorySegment config, MemorySegment f, MemorySegment kernelParams, MemorySegment extra) {
        int injected = plan.before("cuLaunchKernelEx");
        return injected != FaultPlan.PASS ? injected : plan.after("cuLaunchKernelEx", next.cuLaunchKernelEx(config, f, kernelParams, extra));
    }

    @Override
    public int cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(MemorySegment numBlocks, MemorySegment func, int blockSize, long dynamicSMemSize, int flags) {
        int injected = plan.before("cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags");
        return injected != FaultPlan.PASS ? injected : plan.after("cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", next.cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize, dynamicSMemSize, flags));
    }

    @Override
    public int cuOccupancyMaxPotentialBlockSizeWithFlags(MemorySegment minGridSize, MemorySegment blockSize, MemorySegment func, MemorySegment blockSizeToDynamicSMemSize, long dynamicSMemSize, int blockSizeLimit, int flags) {
        int injected = plan.before("cuOccupancyMaxPotentialBlockSizeWithFlags");
        return injected != FaultPlan.PASS ? injected : plan.after("cuOccupancyMaxPotentialBlockSizeWithFlags", next.cuOccupancyMaxPotentialBlockSizeWithFlags(minGridSize, blockSize, func, blockSizeToDynamicSMemSize, dynamicSMemSize, blockSizeLimit, flags));
    }

    @Override
    public int cuOccupancyMaxActiveClusters(MemorySegment numClusters, MemorySegment func, MemorySegment config) {
        int injected = plan.before("cuOccupancyMaxActiveClusters");
        return injected != FaultPlan.PASS ? injected : plan.after("cuOccupancyMaxActiveClusters", next.cuOccupancyMaxActiveClusters(numClusters, func, config));
    }

    @Override
    public int cuOccupancyAvailableDynamicSMemPerBlock(MemorySegment dynamicSmemSize, MemorySegment func, int numBlocks, int blockSize) {
        int injected = plan.before("cuOccupancyAvailableDynamicSMemPerBlock");
        return injected != FaultPlan.PASS ? injected : plan.after("cuOccupancyAvailableDynamicSMemPerBlock", next.cuOccupancyAvailableDynamicSMemPerBlock(dynamicSmemSize, func, numBlocks, blockSize));
    }

    @Override
    public int cuStreamBeginCapture_v2(MemorySegment hStream, int mode) {
        int injected = plan.before("cuStreamBeginCapture_v2");
        return injected != FaultPlan.PASS ? injected : plan.after("cuStreamBeginCapture_v2", next.cuStreamBeginCapture_v2(hStream, mode));
    }

    @Override
    public int cuStreamEndCapture(MemorySegment hStream, MemorySegment phGraph) {
        int injected = plan.before("cuStreamEndCapture");
        return injected != FaultPlan.PASS ? injected : plan.after("cuStreamEndCapture", next.cuStreamEndCapture(hStream, phGraph));
    }

    @Override
    public int cuStreamGetCaptureInfo_v3(MemorySegment hStream, MemorySegment captureStatus_out, MemorySegment id_out, MemorySegment graph_out, MemorySegment dependencies_out, MemorySegment edgeData_out, MemorySegment numDependencies_out) {
        int injected = plan.before("cuStreamGetCaptureInfo_v3");
        return injected != FaultPlan.PASS ? injected : plan.after("cuStreamGetCaptureInfo_v3", next.cuStreamGetCaptureInfo_v3(hStream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out, numDependencies_out));
    }

    @Override
    public int cuThreadExchangeStreamCaptureMode(MemorySegment mode) {
        int injected = plan.before("cuThreadExchangeStreamCaptureMode");
        return injected != FaultPlan.PASS ? injected : plan.after("cuThreadExchangeStreamCaptureMode", next.cuThreadExchangeStreamCaptureMode(mode));
    }

    @Override
    public int cuGraphInstantiateWithFlags(MemorySegment phGraphExec, MemorySegment hGraph, long flags) {
        int injected = plan.before("cuGraphInstantiateWithFlags");
        return injected != FaultPlan.PASS ? injected : plan.after("cuGraphInstantiateWithFlags", next.cuGraphInstantiateWithFlags(phGraphExec, hGraph, flags));
    }

    @Override
    public int cuGraphLaunch(MemorySegment hGraphExec, MemorySegment hStream) {
        int injected = plan.before("cuGraphLaunch");
        return injected != FaultPlan.PASS ? injected : plan.after("cuGraphLaunch", next.cuGraphLaunch(hGraphExec, hStream));
    }

    @Override
    public int cuGraphUpload(MemorySegment hGraphExec, MemorySegment hStream) {
        int injected = plan.before("cuGraphUpload");
        return injected != FaultPlan.PASS ? injected : plan.after("cuGraphUpload", next.cuGraphUpload(hGraphExec, hStream));
    }

    @Override
    public int cuGraphDestroy(MemorySegment hGraph) {
        int injected = plan.before("cuGraphDestroy");
        return injected != FaultPlan.PASS ? injected : plan.after("cuGraphDestroy", next.cuGraphDestroy(hGraph));
    }

    @Override
    public int cuGraphExecDestroy(MemorySegment hGraphExec) {
        int injected = plan.before("cuGraphExecDestroy");
        return injected != FaultPlan.PASS ? injected : plan.after("cuGraphExecDestroy", next.cuGraphExecDestroy(hGraphExec));
    }

    @Override
    public int cuGraphExecUpdate_v2(MemorySegment hGraphExec, MemorySegment hGraph, MemorySegment resultInfo) {
        int injected = plan.before("cuGraphExecUpdate_v2");
        return injected != FaultPlan.PASS ? injected : plan.after("cuGraphExecUpdate_v2", next.cuGraphExecUpdate_v2(hGraphExec, hGraph, resultInfo));
    }

    @Override
    public int cuGraphGetNodes(MemorySegment hGraph, MemorySegment nodes, MemorySegment numNodes) {
        int injected = plan.before("cuGraphGetNodes");
        return injected != FaultPlan.PASS ? injected : plan.after("cuGraphGetNodes", next.cuGraphGetNodes(hGraph, nodes, numNodes));
    }

    @Override
    public int cuGraphNodeGetType(MemorySegment hNode, MemorySegment type) {
        int injected = plan.before("cuGraphNodeGetType");
        return injected != FaultPlan.PASS ? injected : plan.after("cuGraphNodeGetType", next.cuGraphNodeGetType(hNode, type));
    }

    @Override
    public int cuGraphKernelNodeGetParams_v2(MemorySegment hNode, MemorySegment nodeParams) {
        int injected = plan.before("cuGraphKernelNodeGetParams_v2");
        return injected != FaultPlan.PASS ? injected : plan.after("cuGraphKernelNodeGetParams_v2", next.cuGraphKernelNodeGetParams_v2(hNode, nodeParams));
    }

    @Override
    public int cuGraphExecKernelNodeSetParams_v2(MemorySegment hGraphExec, MemorySegment hNode, MemorySegment nodeParams) {
        int injected = plan.before("cuGraphExecKernelNodeSetParams_v2");
        return injected != FaultPlan.PASS ? injected : plan.after("cuGraphExecKernelNodeSetParams_v2", next.cuGraphExecKernelNodeSetParams_v2(hGraphExec, hNode, nodeParams));
    }
}
