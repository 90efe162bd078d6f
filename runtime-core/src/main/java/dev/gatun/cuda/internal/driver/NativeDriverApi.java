package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;

/**
 * Layer 1 behind the {@link DriverApi} seam: each method is the generated downcall, nothing else.
 *
 * <p>Safety: the generated holders resolve a symbol on first call and fail their class
 * initialization when it is absent, so Gatun calls a function newer than its 12.0 baseline only
 * after {@link Driver#require} has seen the symbol ({@link #hasSymbol}). Every pointer argument
 * is a segment that the calling owner keeps alive for the call (or, for asynchronous work, until
 * its completion evidence is complete); that argument is made where each call is made.
 */
final class NativeDriverApi implements DriverApi {

    /** Libraries registered with this class loader by the loader; the bindings search the same. */
    private final SymbolLookup loaded = SymbolLookup.loaderLookup();

    @Override
    public boolean hasSymbol(String name) {
        return loaded.find(name).isPresent();
    }

    @Override
    public int cuInit(int Flags) {
        return CudaDriver.cuInit(Flags);
    }

    @Override
    public int cuDriverGetVersion(MemorySegment driverVersion) {
        return CudaDriver.cuDriverGetVersion(driverVersion);
    }

    @Override
    public int cuGetErrorName(int error, MemorySegment pStr) {
        return CudaDriver.cuGetErrorName(error, pStr);
    }

    @Override
    public int cuGetErrorString(int error, MemorySegment pStr) {
        return CudaDriver.cuGetErrorString(error, pStr);
    }

    @Override
    public int cuDeviceGetCount(MemorySegment count) {
        return CudaDriver.cuDeviceGetCount(count);
    }

    @Override
    public int cuDeviceGet(MemorySegment device, int ordinal) {
        return CudaDriver.cuDeviceGet(device, ordinal);
    }

    @Override
    public int cuDeviceGetName(MemorySegment name, int len, int dev) {
        return CudaDriver.cuDeviceGetName(name, len, dev);
    }

    @Override
    public int cuDeviceGetAttribute(MemorySegment pi, int attrib, int dev) {
        return CudaDriver.cuDeviceGetAttribute(pi, attrib, dev);
    }

    @Override
    public int cuDeviceTotalMem_v2(MemorySegment bytes, int dev) {
        return CudaDriver.cuDeviceTotalMem_v2(bytes, dev);
    }

    @Override
    public int cuDeviceGetPCIBusId(MemorySegment pciBusId, int len, int dev) {
        return CudaDriver.cuDeviceGetPCIBusId(pciBusId, len, dev);
    }

    @Override
    public int cuDeviceCanAccessPeer(MemorySegment canAccessPeer, int dev, int peerDev) {
        return CudaDriver.cuDeviceCanAccessPeer(canAccessPeer, dev, peerDev);
    }

    @Override
    public int cuDeviceGetP2PAttribute(MemorySegment value, int attrib, int srcDevice, int dstDevice) {
        return CudaDriver.cuDeviceGetP2PAttribute(value, attrib, srcDevice, dstDevice);
    }

    @Override
    public int cuDevicePrimaryCtxRetain(MemorySegment pctx, int dev) {
        return CudaDriver.cuDevicePrimaryCtxRetain(pctx, dev);
    }

    @Override
    public int cuCtxSetCurrent(MemorySegment ctx) {
        return CudaDriver.cuCtxSetCurrent(ctx);
    }

    @Override
    public int cuCtxGetCurrent(MemorySegment pctx) {
        return CudaDriver.cuCtxGetCurrent(pctx);
    }

    @Override
    public int cuCtxSynchronize() {
        return CudaDriver.cuCtxSynchronize();
    }

    @Override
    public int cuCtxGetStreamPriorityRange(MemorySegment leastPriority, MemorySegment greatestPriority) {
        return CudaDriver.cuCtxGetStreamPriorityRange(leastPriority, greatestPriority);
    }

    @Override
    public int cuCtxEnablePeerAccess(MemorySegment peerContext, int Flags) {
        return CudaDriver.cuCtxEnablePeerAccess(peerContext, Flags);
    }

    @Override
    public int cuMemGetInfo_v2(MemorySegment free, MemorySegment total) {
        return CudaDriver.cuMemGetInfo_v2(free, total);
    }

    @Override
    public int cuStreamCreateWithPriority(MemorySegment phStream, int flags, int priority) {
        return CudaDriver.cuStreamCreateWithPriority(phStream, flags, priority);
    }

    @Override
    public int cuStreamDestroy_v2(MemorySegment hStream) {
        return CudaDriver.cuStreamDestroy_v2(hStream);
    }

    @Override
    public int cuStreamQuery(MemorySegment hStream) {
        return CudaDriver.cuStreamQuery(hStream);
    }

    @Override
    public int cuStreamSynchronize(MemorySegment hStream) {
        return CudaDriver.cuStreamSynchronize(hStream);
    }

    @Override
    public int cuStreamWaitEvent(MemorySegment hStream, MemorySegment hEvent, int Flags) {
        return CudaDriver.cuStreamWaitEvent(hStream, hEvent, Flags);
    }

    @Override
    public int cuStreamIsCapturing(MemorySegment hStream, MemorySegment captureStatus) {
        return CudaDriver.cuStreamIsCapturing(hStream, captureStatus);
    }

    @Override
    public int cuStreamGetPriority(MemorySegment hStream, MemorySegment priority) {
        return CudaDriver.cuStreamGetPriority(hStream, priority);
    }

    @Override
    public int cuEventCreate(MemorySegment phEvent, int Flags) {
        return CudaDriver.cuEventCreate(phEvent, Flags);
    }

    @Override
    public int cuEventDestroy_v2(MemorySegment hEvent) {
        return CudaDriver.cuEventDestroy_v2(hEvent);
    }

    @Override
    public int cuEventRecord(MemorySegment hEvent, MemorySegment hStream) {
        return CudaDriver.cuEventRecord(hEvent, hStream);
    }

    @Override
    public int cuEventQuery(MemorySegment hEvent) {
        return CudaDriver.cuEventQuery(hEvent);
    }

    @Override
    public int cuEventSynchronize(MemorySegment hEvent) {
        return CudaDriver.cuEventSynchronize(hEvent);
    }

    @Override
    public int cuEventElapsedTime_v2(MemorySegment pMilliseconds, MemorySegment hStart, MemorySegment hEnd) {
        return CudaDriver.cuEventElapsedTime_v2(pMilliseconds, hStart, hEnd);
    }

    @Override
    public int cuMemAlloc_v2(MemorySegment dptr, long bytesize) {
        return CudaDriver.cuMemAlloc_v2(dptr, bytesize);
    }

    @Override
    public int cuMemFree_v2(long dptr) {
        return CudaDriver.cuMemFree_v2(dptr);
    }

    @Override
    public int cuMemAllocAsync(MemorySegment dptr, long bytesize, MemorySegment hStream) {
        return CudaDriver.cuMemAllocAsync(dptr, bytesize, hStream);
    }

    @Override
    public int cuMemFreeAsync(long dptr, MemorySegment hStream) {
        return CudaDriver.cuMemFreeAsync(dptr, hStream);
    }

    @Override
    public int cuMemHostAlloc(MemorySegment pp, long bytesize, int Flags) {
        return CudaDriver.cuMemHostAlloc(pp, bytesize, Flags);
    }

    @Override
    public int cuMemFreeHost(MemorySegment p) {
        return CudaDriver.cuMemFreeHost(p);
    }

    @Override
    public int cuMemsetD8_v2(long dstDevice, byte uc, long N) {
        return CudaDriver.cuMemsetD8_v2(dstDevice, uc, N);
    }

    @Override
    public int cuMemsetD8Async(long dstDevice, byte uc, long N, MemorySegment hStream) {
        return CudaDriver.cuMemsetD8Async(dstDevice, uc, N, hStream);
    }

    @Override
    public int cuMemsetD32_v2(long dstDevice, int ui, long N) {
        return CudaDriver.cuMemsetD32_v2(dstDevice, ui, N);
    }

    @Override
    public int cuMemsetD32Async(long dstDevice, int ui, long N, MemorySegment hStream) {
        return CudaDriver.cuMemsetD32Async(dstDevice, ui, N, hStream);
    }

    @Override
    public int cuMemcpyHtoD_v2(long dstDevice, MemorySegment srcHost, long ByteCount) {
        return CudaDriver.cuMemcpyHtoD_v2(dstDevice, srcHost, ByteCount);
    }

    @Override
    public int cuMemcpyDtoH_v2(MemorySegment dstHost, long srcDevice, long ByteCount) {
        return CudaDriver.cuMemcpyDtoH_v2(dstHost, srcDevice, ByteCount);
    }

    @Override
    public int cuMemcpyDtoD_v2(long dstDevice, long srcDevice, long ByteCount) {
        return CudaDriver.cuMemcpyDtoD_v2(dstDevice, srcDevice, ByteCount);
    }

    @Override
    public int cuMemcpyHtoDAsync_v2(long dstDevice, MemorySegment srcHost, long ByteCount, MemorySegment hStream) {
        return CudaDriver.cuMemcpyHtoDAsync_v2(dstDevice, srcHost, ByteCount, hStream);
    }

    @Override
    public int cuMemcpyDtoHAsync_v2(MemorySegment dstHost, long srcDevice, long ByteCount, MemorySegment hStream) {
        return CudaDriver.cuMemcpyDtoHAsync_v2(dstHost, srcDevice, ByteCount, hStream);
    }

    @Override
    public int cuMemcpyDtoDAsync_v2(long dstDevice, long srcDevice, long ByteCount, MemorySegment hStream) {
        return CudaDriver.cuMemcpyDtoDAsync_v2(dstDevice, srcDevice, ByteCount, hStream);
    }

    @Override
    public int cuMemcpyPeer(long dstDevice, MemorySegment dstContext, long srcDevice, MemorySegment srcContext, long ByteCount) {
        return CudaDriver.cuMemcpyPeer(dstDevice, dstContext, srcDevice, srcContext, ByteCount);
    }

    @Override
    public int cuMemcpyPeerAsync(long dstDevice, MemorySegment dstContext, long srcDevice, MemorySegment srcContext, long ByteCount, MemorySegment hStream) {
        return CudaDriver.cuMemcpyPeerAsync(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream);
    }

    @Override
    public int cuModuleLoadData(MemorySegment module, MemorySegment image) {
        return CudaDriver.cuModuleLoadData(module, image);
    }

    @Override
    public int cuModuleUnload(MemorySegment hmod) {
        return CudaDriver.cuModuleUnload(hmod);
    }

    @Override
    public int cuModuleGetFunction(MemorySegment hfunc, MemorySegment hmod, MemorySegment name) {
        return CudaDriver.cuModuleGetFunction(hfunc, hmod, name);
    }

    @Override
    public int cuFuncGetAttribute(MemorySegment pi, int attrib, MemorySegment hfunc) {
        return CudaDriver.cuFuncGetAttribute(pi, attrib, hfunc);
    }

    @Override
    public int cuFuncSetAttribute(MemorySegment hfunc, int attrib, int value) {
        return CudaDriver.cuFuncSetAttribute(hfunc, attrib, value);
    }

    @Override
    public int cuFuncGetParamInfo(MemorySegment func, long paramIndex, MemorySegment paramOffset, MemorySegment paramSize) {
        return CudaDriver.cuFuncGetParamInfo(func, paramIndex, paramOffset, paramSize);
    }

    @Override
    public int cuLaunchKernel(MemorySegment f, int gridDimX, int gridDimY, int gridDimZ, int blockDimX, int blockDimY, int blockDimZ, int sharedMemBytes, MemorySegment hStream, MemorySegment kernelParams, MemorySegment extra) {
        return CudaDriver.cuLaunchKernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams, extra);
    }

    @Override
    public int cuLaunchCooperativeKernel(MemorySegment f, int gridDimX, int gridDimY, int gridDimZ, int blockDimX, int blockDimY, int blockDimZ, int sharedMemBytes, MemorySegment hStream, MemorySegment kernelParams) {
        return CudaDriver.cuLaunchCooperativeKernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams);
    }

    @Override
    public int cuLaunchKernelEx(MemorySegment config, MemorySegment f, MemorySegment kernelParams, MemorySegment extra) {
        return CudaDriver.cuLaunchKernelEx(config, f, kernelParams, extra);
    }

    @Override
    public int cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(MemorySegment numBlocks, MemorySegment func, int blockSize, long dynamicSMemSize, int flags) {
        return CudaDriver.cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize, dynamicSMemSize, flags);
    }

    @Override
    public int cuOccupancyMaxPotentialBlockSizeWithFlags(MemorySegment minGridSize, MemorySegment blockSize, MemorySegment func, MemorySegment blockSizeToDynamicSMemSize, long dynamicSMemSize, int blockSizeLimit, int flags) {
        return CudaDriver.cuOccupancyMaxPotentialBlockSizeWithFlags(minGridSize, blockSize, func, blockSizeToDynamicSMemSize, dynamicSMemSize, blockSizeLimit, flags);
    }

    @Override
    public int cuOccupancyMaxActiveClusters(MemorySegment numClusters, MemorySegment func, MemorySegment config) {
        return CudaDriver.cuOccupancyMaxActiveClusters(numClusters, func, config);
    }

    @Override
    public int cuOccupancyAvailableDynamicSMemPerBlock(MemorySegment dynamicSmemSize, MemorySegment func, int numBlocks, int blockSize) {
        return CudaDriver.cuOccupancyAvailableDynamicSMemPerBlock(dynamicSmemSize, func, numBlocks, blockSize);
    }

    @Override
    public int cuStreamBeginCapture_v2(MemorySegment hStream, int mode) {
        return CudaDriver.cuStreamBeginCapture_v2(hStream, mode);
    }

    @Override
    public int cuStreamEndCapture(MemorySegment hStream, MemorySegment phGraph) {
        return CudaDriver.cuStreamEndCapture(hStream, phGraph);
    }

    @Override
    public int cuStreamGetCaptureInfo_v3(MemorySegment hStream, MemorySegment captureStatus_out, MemorySegment id_out, MemorySegment graph_out, MemorySegment dependencies_out, MemorySegment edgeData_out, MemorySegment numDependencies_out) {
        return CudaDriver.cuStreamGetCaptureInfo_v3(hStream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out, numDependencies_out);
    }

    @Override
    public int cuThreadExchangeStreamCaptureMode(MemorySegment mode) {
        return CudaDriver.cuThreadExchangeStreamCaptureMode(mode);
    }

    @Override
    public int cuGraphInstantiateWithFlags(MemorySegment phGraphExec, MemorySegment hGraph, long flags) {
        return CudaDriver.cuGraphInstantiateWithFlags(phGraphExec, hGraph, flags);
    }

    @Override
    public int cuGraphLaunch(MemorySegment hGraphExec, MemorySegment hStream) {
        return CudaDriver.cuGraphLaunch(hGraphExec, hStream);
    }

    @Override
    public int cuGraphUpload(MemorySegment hGraphExec, MemorySegment hStream) {
        return CudaDriver.cuGraphUpload(hGraphExec, hStream);
    }

    @Override
    public int cuGraphDestroy(MemorySegment hGraph) {
        return CudaDriver.cuGraphDestroy(hGraph);
    }

    @Override
    public int cuGraphExecDestroy(MemorySegment hGraphExec) {
        return CudaDriver.cuGraphExecDestroy(hGraphExec);
    }

    @Override
    public int cuGraphExecUpdate_v2(MemorySegment hGraphExec, MemorySegment hGraph, MemorySegment resultInfo) {
        return CudaDriver.cuGraphExecUpdate_v2(hGraphExec, hGraph, resultInfo);
    }

    @Override
    public int cuGraphGetNodes(MemorySegment hGraph, MemorySegment nodes, MemorySegment numNodes) {
        return CudaDriver.cuGraphGetNodes(hGraph, nodes, numNodes);
    }

    @Override
    public int cuGraphNodeGetType(MemorySegment hNode, MemorySegment type) {
        return CudaDriver.cuGraphNodeGetType(hNode, type);
    }

    @Override
    public int cuGraphKernelNodeGetParams_v2(MemorySegment hNode, MemorySegment nodeParams) {
        return CudaDriver.cuGraphKernelNodeGetParams_v2(hNode, nodeParams);
    }

    @Override
    public int cuGraphExecKernelNodeSetParams_v2(MemorySegment hGraphExec, MemorySegment hNode, MemorySegment nodeParams) {
        return CudaDriver.cuGraphExecKernelNodeSetParams_v2(hGraphExec, hNode, nodeParams);
    }
}
