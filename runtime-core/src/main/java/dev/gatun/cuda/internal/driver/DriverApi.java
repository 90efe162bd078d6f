package dev.gatun.cuda.internal.driver;

import java.lang.foreign.MemorySegment;

/**
 * The CUDA driver functions Gatun calls, with the generated bindings' exact signatures: pointers
 * and handles as {@link MemorySegment}, {@code CUdeviceptr} and {@code size_t} as {@code long},
 * enums and flags as {@code int}; every method returns the raw {@code CUresult}.
 *
 * <p>This is the seam between layer 1 (generated downcalls, {@link NativeDriverApi}) and the
 * checked layer: tests put a simulated driver or a {@link FaultInjectingDriverApi} behind it.
 * Nothing here checks a result; callers go through {@link Driver#check} or a context's check.
 */
public interface DriverApi {

    /** Whether the loaded library exports this symbol (a function newer than the driver does not). */
    boolean hasSymbol(String name);

    // Initialization, version and error strings
    int cuInit(int Flags);
    int cuDriverGetVersion(MemorySegment driverVersion);
    int cuGetErrorName(int error, MemorySegment pStr);
    int cuGetErrorString(int error, MemorySegment pStr);

    // Devices
    int cuDeviceGetCount(MemorySegment count);
    int cuDeviceGet(MemorySegment device, int ordinal);
    int cuDeviceGetName(MemorySegment name, int len, int dev);
    int cuDeviceGetAttribute(MemorySegment pi, int attrib, int dev);
    int cuDeviceTotalMem_v2(MemorySegment bytes, int dev);
    int cuDeviceGetPCIBusId(MemorySegment pciBusId, int len, int dev);
    int cuDeviceCanAccessPeer(MemorySegment canAccessPeer, int dev, int peerDev);
    int cuDeviceGetP2PAttribute(MemorySegment value, int attrib, int srcDevice, int dstDevice);

    // Contexts
    int cuDevicePrimaryCtxRetain(MemorySegment pctx, int dev);
    int cuCtxSetCurrent(MemorySegment ctx);
    int cuCtxGetCurrent(MemorySegment pctx);
    int cuCtxSynchronize();
    int cuCtxGetStreamPriorityRange(MemorySegment leastPriority, MemorySegment greatestPriority);
    int cuCtxEnablePeerAccess(MemorySegment peerContext, int Flags);
    int cuMemGetInfo_v2(MemorySegment free, MemorySegment total);

    // Streams
    int cuStreamCreateWithPriority(MemorySegment phStream, int flags, int priority);
    int cuStreamDestroy_v2(MemorySegment hStream);
    int cuStreamQuery(MemorySegment hStream);
    int cuStreamSynchronize(MemorySegment hStream);
    int cuStreamWaitEvent(MemorySegment hStream, MemorySegment hEvent, int Flags);
    int cuStreamIsCapturing(MemorySegment hStream, MemorySegment captureStatus);
    int cuStreamGetPriority(MemorySegment hStream, MemorySegment priority);

    // Events
    int cuEventCreate(MemorySegment phEvent, int Flags);
    int cuEventDestroy_v2(MemorySegment hEvent);
    int cuEventRecord(MemorySegment hEvent, MemorySegment hStream);
    int cuEventQuery(MemorySegment hEvent);
    int cuEventSynchronize(MemorySegment hEvent);
    int cuEventElapsedTime_v2(MemorySegment pMilliseconds, MemorySegment hStart, MemorySegment hEnd);

    // Memory
    int cuMemAlloc_v2(MemorySegment dptr, long bytesize);
    int cuMemFree_v2(long dptr);
    int cuMemAllocAsync(MemorySegment dptr, long bytesize, MemorySegment hStream);
    int cuMemFreeAsync(long dptr, MemorySegment hStream);
    int cuMemHostAlloc(MemorySegment pp, long bytesize, int Flags);
    int cuMemFreeHost(MemorySegment p);
    int cuMemsetD8_v2(long dstDevice, byte uc, long N);
    int cuMemsetD8Async(long dstDevice, byte uc, long N, MemorySegment hStream);
    int cuMemsetD32_v2(long dstDevice, int ui, long N);
    int cuMemsetD32Async(long dstDevice, int ui, long N, MemorySegment hStream);
    int cuMemcpyHtoD_v2(long dstDevice, MemorySegment srcHost, long ByteCount);
    int cuMemcpyDtoH_v2(MemorySegment dstHost, long srcDevice, long ByteCount);
    int cuMemcpyDtoD_v2(long dstDevice, long srcDevice, long ByteCount);
    int cuMemcpyHtoDAsync_v2(long dstDevice, MemorySegment srcHost, long ByteCount, MemorySegment hStream);
    int cuMemcpyDtoHAsync_v2(MemorySegment dstHost, long srcDevice, long ByteCount, MemorySegment hStream);
    int cuMemcpyDtoDAsync_v2(long dstDevice, long srcDevice, long ByteCount, MemorySegment hStream);
    int cuMemcpyPeer(long dstDevice, MemorySegment dstContext, long srcDevice, MemorySegment srcContext, long ByteCount);
    int cuMemcpyPeerAsync(long dstDevice, MemorySegment dstContext, long srcDevice, MemorySegment srcContext, long ByteCount, MemorySegment hStream);

    // Modules, functions and launches
    int cuModuleLoadData(MemorySegment module, MemorySegment image);
    int cuModuleUnload(MemorySegment hmod);
    int cuModuleGetFunction(MemorySegment hfunc, MemorySegment hmod, MemorySegment name);
    int cuFuncGetAttribute(MemorySegment pi, int attrib, MemorySegment hfunc);
    int cuFuncSetAttribute(MemorySegment hfunc, int attrib, int value);
    int cuFuncGetParamInfo(MemorySegment func, long paramIndex, MemorySegment paramOffset, MemorySegment paramSize);
    int cuLaunchKernel(MemorySegment f, int gridDimX, int gridDimY, int gridDimZ, int blockDimX, int blockDimY, int blockDimZ, int sharedMemBytes, MemorySegment hStream, MemorySegment kernelParams, MemorySegment extra);
    int cuLaunchCooperativeKernel(MemorySegment f, int gridDimX, int gridDimY, int gridDimZ, int blockDimX, int blockDimY, int blockDimZ, int sharedMemBytes, MemorySegment hStream, MemorySegment kernelParams);
    int cuLaunchKernelEx(MemorySegment config, MemorySegment f, MemorySegment kernelParams, MemorySegment extra);
    int cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(MemorySegment numBlocks, MemorySegment func, int blockSize, long dynamicSMemSize, int flags);
    int cuOccupancyMaxPotentialBlockSizeWithFlags(MemorySegment minGridSize, MemorySegment blockSize, MemorySegment func, MemorySegment blockSizeToDynamicSMemSize, long dynamicSMemSize, int blockSizeLimit, int flags);
    int cuOccupancyMaxActiveClusters(MemorySegment numClusters, MemorySegment func, MemorySegment config);
    int cuOccupancyAvailableDynamicSMemPerBlock(MemorySegment dynamicSmemSize, MemorySegment func, int numBlocks, int blockSize);

    // Stream capture and graphs
    int cuStreamBeginCapture_v2(MemorySegment hStream, int mode);
    int cuStreamEndCapture(MemorySegment hStream, MemorySegment phGraph);
    int cuStreamGetCaptureInfo_v3(MemorySegment hStream, MemorySegment captureStatus_out, MemorySegment id_out, MemorySegment graph_out, MemorySegment dependencies_out, MemorySegment edgeData_out, MemorySegment numDependencies_out);
    int cuThreadExchangeStreamCaptureMode(MemorySegment mode);
    int cuGraphInstantiateWithFlags(MemorySegment phGraphExec, MemorySegment hGraph, long flags);
    int cuGraphLaunch(MemorySegment hGraphExec, MemorySegment hStream);
    int cuGraphUpload(MemorySegment hGraphExec, MemorySegment hStream);
    int cuGraphDestroy(MemorySegment hGraph);
    int cuGraphExecDestroy(MemorySegment hGraphExec);
    int cuGraphExecUpdate_v2(MemorySegment hGraphExec, MemorySegment hGraph, MemorySegment resultInfo);
    int cuGraphGetNodes(MemorySegment hGraph, MemorySegment nodes, MemorySegment numNodes);
    int cuGraphNodeGetType(MemorySegment hNode, MemorySegment type);
    int cuGraphKernelNodeGetParams_v2(MemorySegment hNode, MemorySegment nodeParams);
    int cuGraphExecKernelNodeSetParams_v2(MemorySegment hGraphExec, MemorySegment hNode, MemorySegment nodeParams);
}
