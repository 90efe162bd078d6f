package dev.gatun.cuda.internal.driver;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.load.Downcalls;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

/**
 * Layer 1 behind the {@link DriverApi} seam: each method is one downcall, nothing else.
 *
 * <p>The handles are resolved in the driver library this instance was made for (its own
 * {@link SymbolLookup}, see {@link Downcalls}), once, and kept in final fields: a call is an
 * {@code invokeExact} of a final field's handle, which allocates nothing. Each class loader
 * that loads Gatun makes its own instance over the same mapped driver.
 *
 * <p>Safety: every descriptor is the one jextract generated from {@code cuda.h}. A function
 * newer than Gatun's 12.0 baseline may be missing from the installed driver; its handle then
 * throws, and Gatun calls it only after {@link Driver#require} has seen the symbol
 * ({@link #hasSymbol}). Every pointer argument is a segment that the calling owner keeps alive
 * for the call (or, for asynchronous work, until its completion evidence is complete); that
 * argument is made where each call is made.
 */
final class NativeDriverApi implements DriverApi {

    private final Downcalls downcalls;
    private final MethodHandle cuInit;
    private final MethodHandle cuDriverGetVersion;
    private final MethodHandle cuGetErrorName;
    private final MethodHandle cuGetErrorString;
    private final MethodHandle cuDeviceGetCount;
    private final MethodHandle cuDeviceGet;
    private final MethodHandle cuDeviceGetName;
    private final MethodHandle cuDeviceGetAttribute;
    private final MethodHandle cuDeviceTotalMem_v2;
    private final MethodHandle cuDeviceGetPCIBusId;
    private final MethodHandle cuDeviceCanAccessPeer;
    private final MethodHandle cuDeviceGetP2PAttribute;
    private final MethodHandle cuDevicePrimaryCtxRetain;
    private final MethodHandle cuCtxSetCurrent;
    private final MethodHandle cuCtxGetCurrent;
    private final MethodHandle cuCtxSynchronize;
    private final MethodHandle cuCtxGetStreamPriorityRange;
    private final MethodHandle cuCtxEnablePeerAccess;
    private final MethodHandle cuMemGetInfo_v2;
    private final MethodHandle cuStreamCreateWithPriority;
    private final MethodHandle cuStreamDestroy_v2;
    private final MethodHandle cuStreamQuery;
    private final MethodHandle cuStreamSynchronize;
    private final MethodHandle cuStreamWaitEvent;
    private final MethodHandle cuStreamIsCapturing;
    private final MethodHandle cuStreamGetPriority;
    private final MethodHandle cuEventCreate;
    private final MethodHandle cuEventDestroy_v2;
    private final MethodHandle cuEventRecord;
    private final MethodHandle cuEventQuery;
    private final MethodHandle cuEventSynchronize;
    private final MethodHandle cuEventElapsedTime_v2;
    private final MethodHandle cuMemAlloc_v2;
    private final MethodHandle cuMemFree_v2;
    private final MethodHandle cuMemAllocAsync;
    private final MethodHandle cuMemFreeAsync;
    private final MethodHandle cuMemHostAlloc;
    private final MethodHandle cuMemFreeHost;
    private final MethodHandle cuMemsetD8_v2;
    private final MethodHandle cuMemsetD8Async;
    private final MethodHandle cuMemsetD32_v2;
    private final MethodHandle cuMemsetD32Async;
    private final MethodHandle cuMemcpyHtoD_v2;
    private final MethodHandle cuMemcpyDtoH_v2;
    private final MethodHandle cuMemcpyDtoD_v2;
    private final MethodHandle cuMemcpyHtoDAsync_v2;
    private final MethodHandle cuMemcpyDtoHAsync_v2;
    private final MethodHandle cuMemcpyDtoDAsync_v2;
    private final MethodHandle cuMemcpyPeer;
    private final MethodHandle cuMemcpyPeerAsync;
    private final MethodHandle cuModuleLoadData;
    private final MethodHandle cuModuleUnload;
    private final MethodHandle cuModuleGetFunction;
    private final MethodHandle cuFuncGetAttribute;
    private final MethodHandle cuFuncSetAttribute;
    private final MethodHandle cuFuncGetParamInfo;
    private final MethodHandle cuLaunchKernel;
    private final MethodHandle cuLaunchCooperativeKernel;
    private final MethodHandle cuLaunchKernelEx;
    private final MethodHandle cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags;
    private final MethodHandle cuOccupancyMaxPotentialBlockSizeWithFlags;
    private final MethodHandle cuOccupancyMaxActiveClusters;
    private final MethodHandle cuOccupancyAvailableDynamicSMemPerBlock;
    private final MethodHandle cuStreamBeginCapture_v2;
    private final MethodHandle cuStreamEndCapture;
    private final MethodHandle cuStreamGetCaptureInfo_v3;
    private final MethodHandle cuThreadExchangeStreamCaptureMode;
    private final MethodHandle cuGraphInstantiateWithFlags;
    private final MethodHandle cuGraphLaunch;
    private final MethodHandle cuGraphUpload;
    private final MethodHandle cuGraphDestroy;
    private final MethodHandle cuGraphExecDestroy;
    private final MethodHandle cuGraphExecUpdate_v2;
    private final MethodHandle cuGraphGetNodes;
    private final MethodHandle cuGraphNodeGetType;
    private final MethodHandle cuGraphKernelNodeGetParams_v2;
    private final MethodHandle cuGraphExecKernelNodeSetParams_v2;

    /**
     * @param symbols the opened driver library
     * @param library where it was loaded from, for messages
     */
    NativeDriverApi(SymbolLookup symbols, String library) {
        downcalls = new Downcalls(CudaDriver.class, symbols, library);
        cuInit = downcalls.handle("cuInit");
        cuDriverGetVersion = downcalls.handle("cuDriverGetVersion");
        cuGetErrorName = downcalls.handle("cuGetErrorName");
        cuGetErrorString = downcalls.handle("cuGetErrorString");
        cuDeviceGetCount = downcalls.handle("cuDeviceGetCount");
        cuDeviceGet = downcalls.handle("cuDeviceGet");
        cuDeviceGetName = downcalls.handle("cuDeviceGetName");
        cuDeviceGetAttribute = downcalls.handle("cuDeviceGetAttribute");
        cuDeviceTotalMem_v2 = downcalls.handle("cuDeviceTotalMem_v2");
        cuDeviceGetPCIBusId = downcalls.handle("cuDeviceGetPCIBusId");
        cuDeviceCanAccessPeer = downcalls.handle("cuDeviceCanAccessPeer");
        cuDeviceGetP2PAttribute = downcalls.handle("cuDeviceGetP2PAttribute");
        cuDevicePrimaryCtxRetain = downcalls.handle("cuDevicePrimaryCtxRetain");
        cuCtxSetCurrent = downcalls.handle("cuCtxSetCurrent");
        cuCtxGetCurrent = downcalls.handle("cuCtxGetCurrent");
        cuCtxSynchronize = downcalls.handle("cuCtxSynchronize");
        cuCtxGetStreamPriorityRange = downcalls.handle("cuCtxGetStreamPriorityRange");
        cuCtxEnablePeerAccess = downcalls.handle("cuCtxEnablePeerAccess");
        cuMemGetInfo_v2 = downcalls.handle("cuMemGetInfo_v2");
        cuStreamCreateWithPriority = downcalls.handle("cuStreamCreateWithPriority");
        cuStreamDestroy_v2 = downcalls.handle("cuStreamDestroy_v2");
        cuStreamQuery = downcalls.handle("cuStreamQuery");
        cuStreamSynchronize = downcalls.handle("cuStreamSynchronize");
        cuStreamWaitEvent = downcalls.handle("cuStreamWaitEvent");
        cuStreamIsCapturing = downcalls.handle("cuStreamIsCapturing");
        cuStreamGetPriority = downcalls.handle("cuStreamGetPriority");
        cuEventCreate = downcalls.handle("cuEventCreate");
        cuEventDestroy_v2 = downcalls.handle("cuEventDestroy_v2");
        cuEventRecord = downcalls.handle("cuEventRecord");
        cuEventQuery = downcalls.handle("cuEventQuery");
        cuEventSynchronize = downcalls.handle("cuEventSynchronize");
        cuEventElapsedTime_v2 = downcalls.handle("cuEventElapsedTime_v2");
        cuMemAlloc_v2 = downcalls.handle("cuMemAlloc_v2");
        cuMemFree_v2 = downcalls.handle("cuMemFree_v2");
        cuMemAllocAsync = downcalls.handle("cuMemAllocAsync");
        cuMemFreeAsync = downcalls.handle("cuMemFreeAsync");
        cuMemHostAlloc = downcalls.handle("cuMemHostAlloc");
        cuMemFreeHost = downcalls.handle("cuMemFreeHost");
        cuMemsetD8_v2 = downcalls.handle("cuMemsetD8_v2");
        cuMemsetD8Async = downcalls.handle("cuMemsetD8Async");
        cuMemsetD32_v2 = downcalls.handle("cuMemsetD32_v2");
        cuMemsetD32Async = downcalls.handle("cuMemsetD32Async");
        cuMemcpyHtoD_v2 = downcalls.handle("cuMemcpyHtoD_v2");
        cuMemcpyDtoH_v2 = downcalls.handle("cuMemcpyDtoH_v2");
        cuMemcpyDtoD_v2 = downcalls.handle("cuMemcpyDtoD_v2");
        cuMemcpyHtoDAsync_v2 = downcalls.handle("cuMemcpyHtoDAsync_v2");
        cuMemcpyDtoHAsync_v2 = downcalls.handle("cuMemcpyDtoHAsync_v2");
        cuMemcpyDtoDAsync_v2 = downcalls.handle("cuMemcpyDtoDAsync_v2");
        cuMemcpyPeer = downcalls.handle("cuMemcpyPeer");
        cuMemcpyPeerAsync = downcalls.handle("cuMemcpyPeerAsync");
        cuModuleLoadData = downcalls.handle("cuModuleLoadData");
        cuModuleUnload = downcalls.handle("cuModuleUnload");
        cuModuleGetFunction = downcalls.handle("cuModuleGetFunction");
        cuFuncGetAttribute = downcalls.handle("cuFuncGetAttribute");
        cuFuncSetAttribute = downcalls.handle("cuFuncSetAttribute");
        cuFuncGetParamInfo = downcalls.handle("cuFuncGetParamInfo");
        cuLaunchKernel = downcalls.handle("cuLaunchKernel");
        cuLaunchCooperativeKernel = downcalls.handle("cuLaunchCooperativeKernel");
        cuLaunchKernelEx = downcalls.handle("cuLaunchKernelEx");
        cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags = downcalls.handle("cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags");
        cuOccupancyMaxPotentialBlockSizeWithFlags = downcalls.handle("cuOccupancyMaxPotentialBlockSizeWithFlags");
        cuOccupancyMaxActiveClusters = downcalls.handle("cuOccupancyMaxActiveClusters");
        cuOccupancyAvailableDynamicSMemPerBlock = downcalls.handle("cuOccupancyAvailableDynamicSMemPerBlock");
        cuStreamBeginCapture_v2 = downcalls.handle("cuStreamBeginCapture_v2");
        cuStreamEndCapture = downcalls.handle("cuStreamEndCapture");
        cuStreamGetCaptureInfo_v3 = downcalls.handle("cuStreamGetCaptureInfo_v3");
        cuThreadExchangeStreamCaptureMode = downcalls.handle("cuThreadExchangeStreamCaptureMode");
        cuGraphInstantiateWithFlags = downcalls.handle("cuGraphInstantiateWithFlags");
        cuGraphLaunch = downcalls.handle("cuGraphLaunch");
        cuGraphUpload = downcalls.handle("cuGraphUpload");
        cuGraphDestroy = downcalls.handle("cuGraphDestroy");
        cuGraphExecDestroy = downcalls.handle("cuGraphExecDestroy");
        cuGraphExecUpdate_v2 = downcalls.handle("cuGraphExecUpdate_v2");
        cuGraphGetNodes = downcalls.handle("cuGraphGetNodes");
        cuGraphNodeGetType = downcalls.handle("cuGraphNodeGetType");
        cuGraphKernelNodeGetParams_v2 = downcalls.handle("cuGraphKernelNodeGetParams_v2");
        cuGraphExecKernelNodeSetParams_v2 = downcalls.handle("cuGraphExecKernelNodeSetParams_v2");
    }

    @Override
    public boolean hasSymbol(String name) {
        return downcalls.exports(name);
    }

    @Override
    public int cuInit(int Flags) {
        try {
            return (int) cuInit.invokeExact(Flags);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuDriverGetVersion(MemorySegment driverVersion) {
        try {
            return (int) cuDriverGetVersion.invokeExact(driverVersion);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuGetErrorName(int error, MemorySegment pStr) {
        try {
            return (int) cuGetErrorName.invokeExact(error, pStr);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuGetErrorString(int error, MemorySegment pStr) {
        try {
            return (int) cuGetErrorString.invokeExact(error, pStr);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuDeviceGetCount(MemorySegment count) {
        try {
            return (int) cuDeviceGetCount.invokeExact(count);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuDeviceGet(MemorySegment device, int ordinal) {
        try {
            return (int) cuDeviceGet.invokeExact(device, ordinal);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuDeviceGetName(MemorySegment name, int len, int dev) {
        try {
            return (int) cuDeviceGetName.invokeExact(name, len, dev);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuDeviceGetAttribute(MemorySegment pi, int attrib, int dev) {
        try {
            return (int) cuDeviceGetAttribute.invokeExact(pi, attrib, dev);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuDeviceTotalMem_v2(MemorySegment bytes, int dev) {
        try {
            return (int) cuDeviceTotalMem_v2.invokeExact(bytes, dev);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuDeviceGetPCIBusId(MemorySegment pciBusId, int len, int dev) {
        try {
            return (int) cuDeviceGetPCIBusId.invokeExact(pciBusId, len, dev);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuDeviceCanAccessPeer(MemorySegment canAccessPeer, int dev, int peerDev) {
        try {
            return (int) cuDeviceCanAccessPeer.invokeExact(canAccessPeer, dev, peerDev);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuDeviceGetP2PAttribute(MemorySegment value, int attrib, int srcDevice, int dstDevice) {
        try {
            return (int) cuDeviceGetP2PAttribute.invokeExact(value, attrib, srcDevice, dstDevice);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuDevicePrimaryCtxRetain(MemorySegment pctx, int dev) {
        try {
            return (int) cuDevicePrimaryCtxRetain.invokeExact(pctx, dev);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuCtxSetCurrent(MemorySegment ctx) {
        try {
            return (int) cuCtxSetCurrent.invokeExact(ctx);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuCtxGetCurrent(MemorySegment pctx) {
        try {
            return (int) cuCtxGetCurrent.invokeExact(pctx);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuCtxSynchronize() {
        try {
            return (int) cuCtxSynchronize.invokeExact();
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuCtxGetStreamPriorityRange(MemorySegment leastPriority, MemorySegment greatestPriority) {
        try {
            return (int) cuCtxGetStreamPriorityRange.invokeExact(leastPriority, greatestPriority);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuCtxEnablePeerAccess(MemorySegment peerContext, int Flags) {
        try {
            return (int) cuCtxEnablePeerAccess.invokeExact(peerContext, Flags);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuMemGetInfo_v2(MemorySegment free, MemorySegment total) {
        try {
            return (int) cuMemGetInfo_v2.invokeExact(free, total);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuStreamCreateWithPriority(MemorySegment phStream, int flags, int priority) {
        try {
            return (int) cuStreamCreateWithPriority.invokeExact(phStream, flags, priority);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuStreamDestroy_v2(MemorySegment hStream) {
        try {
            return (int) cuStreamDestroy_v2.invokeExact(hStream);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuStreamQuery(MemorySegment hStream) {
        try {
            return (int) cuStreamQuery.invokeExact(hStream);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuStreamSynchronize(MemorySegment hStream) {
        try {
            return (int) cuStreamSynchronize.invokeExact(hStream);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuStreamWaitEvent(MemorySegment hStream, MemorySegment hEvent, int Flags) {
        try {
            return (int) cuStreamWaitEvent.invokeExact(hStream, hEvent, Flags);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuStreamIsCapturing(MemorySegment hStream, MemorySegment captureStatus) {
        try {
            return (int) cuStreamIsCapturing.invokeExact(hStream, captureStatus);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuStreamGetPriority(MemorySegment hStream, MemorySegment priority) {
        try {
            return (int) cuStreamGetPriority.invokeExact(hStream, priority);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuEventCreate(MemorySegment phEvent, int Flags) {
        try {
            return (int) cuEventCreate.invokeExact(phEvent, Flags);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuEventDestroy_v2(MemorySegment hEvent) {
        try {
            return (int) cuEventDestroy_v2.invokeExact(hEvent);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuEventRecord(MemorySegment hEvent, MemorySegment hStream) {
        try {
            return (int) cuEventRecord.invokeExact(hEvent, hStream);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuEventQuery(MemorySegment hEvent) {
        try {
            return (int) cuEventQuery.invokeExact(hEvent);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuEventSynchronize(MemorySegment hEvent) {
        try {
            return (int) cuEventSynchronize.invokeExact(hEvent);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuEventElapsedTime_v2(MemorySegment pMilliseconds, MemorySegment hStart, MemorySegment hEnd) {
        try {
            return (int) cuEventElapsedTime_v2.invokeExact(pMilliseconds, hStart, hEnd);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuMemAlloc_v2(MemorySegment dptr, long bytesize) {
        try {
            return (int) cuMemAlloc_v2.invokeExact(dptr, bytesize);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuMemFree_v2(long dptr) {
        try {
            return (int) cuMemFree_v2.invokeExact(dptr);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuMemAllocAsync(MemorySegment dptr, long bytesize, MemorySegment hStream) {
        try {
            return (int) cuMemAllocAsync.invokeExact(dptr, bytesize, hStream);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuMemFreeAsync(long dptr, MemorySegment hStream) {
        try {
            return (int) cuMemFreeAsync.invokeExact(dptr, hStream);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuMemHostAlloc(MemorySegment pp, long bytesize, int Flags) {
        try {
            return (int) cuMemHostAlloc.invokeExact(pp, bytesize, Flags);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuMemFreeHost(MemorySegment p) {
        try {
            return (int) cuMemFreeHost.invokeExact(p);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuMemsetD8_v2(long dstDevice, byte uc, long N) {
        try {
            return (int) cuMemsetD8_v2.invokeExact(dstDevice, uc, N);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuMemsetD8Async(long dstDevice, byte uc, long N, MemorySegment hStream) {
        try {
            return (int) cuMemsetD8Async.invokeExact(dstDevice, uc, N, hStream);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuMemsetD32_v2(long dstDevice, int ui, long N) {
        try {
            return (int) cuMemsetD32_v2.invokeExact(dstDevice, ui, N);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuMemsetD32Async(long dstDevice, int ui, long N, MemorySegment hStream) {
        try {
            return (int) cuMemsetD32Async.invokeExact(dstDevice, ui, N, hStream);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuMemcpyHtoD_v2(long dstDevice, MemorySegment srcHost, long ByteCount) {
        try {
            return (int) cuMemcpyHtoD_v2.invokeExact(dstDevice, srcHost, ByteCount);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuMemcpyDtoH_v2(MemorySegment dstHost, long srcDevice, long ByteCount) {
        try {
            return (int) cuMemcpyDtoH_v2.invokeExact(dstHost, srcDevice, ByteCount);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuMemcpyDtoD_v2(long dstDevice, long srcDevice, long ByteCount) {
        try {
            return (int) cuMemcpyDtoD_v2.invokeExact(dstDevice, srcDevice, ByteCount);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuMemcpyHtoDAsync_v2(long dstDevice, MemorySegment srcHost, long ByteCount, MemorySegment hStream) {
        try {
            return (int) cuMemcpyHtoDAsync_v2.invokeExact(dstDevice, srcHost, ByteCount, hStream);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuMemcpyDtoHAsync_v2(MemorySegment dstHost, long srcDevice, long ByteCount, MemorySegment hStream) {
        try {
            return (int) cuMemcpyDtoHAsync_v2.invokeExact(dstHost, srcDevice, ByteCount, hStream);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuMemcpyDtoDAsync_v2(long dstDevice, long srcDevice, long ByteCount, MemorySegment hStream) {
        try {
            return (int) cuMemcpyDtoDAsync_v2.invokeExact(dstDevice, srcDevice, ByteCount, hStream);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuMemcpyPeer(long dstDevice, MemorySegment dstContext, long srcDevice, MemorySegment srcContext, long ByteCount) {
        try {
            return (int) cuMemcpyPeer.invokeExact(dstDevice, dstContext, srcDevice, srcContext, ByteCount);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuMemcpyPeerAsync(long dstDevice, MemorySegment dstContext, long srcDevice, MemorySegment srcContext, long ByteCount, MemorySegment hStream) {
        try {
            return (int) cuMemcpyPeerAsync.invokeExact(dstDevice, dstContext, srcDevice, srcContext, ByteCount, hStream);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuModuleLoadData(MemorySegment module, MemorySegment image) {
        try {
            return (int) cuModuleLoadData.invokeExact(module, image);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuModuleUnload(MemorySegment hmod) {
        try {
            return (int) cuModuleUnload.invokeExact(hmod);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuModuleGetFunction(MemorySegment hfunc, MemorySegment hmod, MemorySegment name) {
        try {
            return (int) cuModuleGetFunction.invokeExact(hfunc, hmod, name);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuFuncGetAttribute(MemorySegment pi, int attrib, MemorySegment hfunc) {
        try {
            return (int) cuFuncGetAttribute.invokeExact(pi, attrib, hfunc);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuFuncSetAttribute(MemorySegment hfunc, int attrib, int value) {
        try {
            return (int) cuFuncSetAttribute.invokeExact(hfunc, attrib, value);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuFuncGetParamInfo(MemorySegment func, long paramIndex, MemorySegment paramOffset, MemorySegment paramSize) {
        try {
            return (int) cuFuncGetParamInfo.invokeExact(func, paramIndex, paramOffset, paramSize);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuLaunchKernel(MemorySegment f, int gridDimX, int gridDimY, int gridDimZ, int blockDimX, int blockDimY, int blockDimZ, int sharedMemBytes, MemorySegment hStream, MemorySegment kernelParams, MemorySegment extra) {
        try {
            return (int) cuLaunchKernel.invokeExact(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams, extra);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuLaunchCooperativeKernel(MemorySegment f, int gridDimX, int gridDimY, int gridDimZ, int blockDimX, int blockDimY, int blockDimZ, int sharedMemBytes, MemorySegment hStream, MemorySegment kernelParams) {
        try {
            return (int) cuLaunchCooperativeKernel.invokeExact(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuLaunchKernelEx(MemorySegment config, MemorySegment f, MemorySegment kernelParams, MemorySegment extra) {
        try {
            return (int) cuLaunchKernelEx.invokeExact(config, f, kernelParams, extra);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(MemorySegment numBlocks, MemorySegment func, int blockSize, long dynamicSMemSize, int flags) {
        try {
            return (int) cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags.invokeExact(numBlocks, func, blockSize, dynamicSMemSize, flags);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuOccupancyMaxPotentialBlockSizeWithFlags(MemorySegment minGridSize, MemorySegment blockSize, MemorySegment func, MemorySegment blockSizeToDynamicSMemSize, long dynamicSMemSize, int blockSizeLimit, int flags) {
        try {
            return (int) cuOccupancyMaxPotentialBlockSizeWithFlags.invokeExact(minGridSize, blockSize, func, blockSizeToDynamicSMemSize, dynamicSMemSize, blockSizeLimit, flags);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuOccupancyMaxActiveClusters(MemorySegment numClusters, MemorySegment func, MemorySegment config) {
        try {
            return (int) cuOccupancyMaxActiveClusters.invokeExact(numClusters, func, config);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuOccupancyAvailableDynamicSMemPerBlock(MemorySegment dynamicSmemSize, MemorySegment func, int numBlocks, int blockSize) {
        try {
            return (int) cuOccupancyAvailableDynamicSMemPerBlock.invokeExact(dynamicSmemSize, func, numBlocks, blockSize);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuStreamBeginCapture_v2(MemorySegment hStream, int mode) {
        try {
            return (int) cuStreamBeginCapture_v2.invokeExact(hStream, mode);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuStreamEndCapture(MemorySegment hStream, MemorySegment phGraph) {
        try {
            return (int) cuStreamEndCapture.invokeExact(hStream, phGraph);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuStreamGetCaptureInfo_v3(MemorySegment hStream, MemorySegment captureStatus_out, MemorySegment id_out, MemorySegment graph_out, MemorySegment dependencies_out, MemorySegment edgeData_out, MemorySegment numDependencies_out) {
        try {
            return (int) cuStreamGetCaptureInfo_v3.invokeExact(hStream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out, numDependencies_out);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuThreadExchangeStreamCaptureMode(MemorySegment mode) {
        try {
            return (int) cuThreadExchangeStreamCaptureMode.invokeExact(mode);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuGraphInstantiateWithFlags(MemorySegment phGraphExec, MemorySegment hGraph, long flags) {
        try {
            return (int) cuGraphInstantiateWithFlags.invokeExact(phGraphExec, hGraph, flags);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuGraphLaunch(MemorySegment hGraphExec, MemorySegment hStream) {
        try {
            return (int) cuGraphLaunch.invokeExact(hGraphExec, hStream);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuGraphUpload(MemorySegment hGraphExec, MemorySegment hStream) {
        try {
            return (int) cuGraphUpload.invokeExact(hGraphExec, hStream);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuGraphDestroy(MemorySegment hGraph) {
        try {
            return (int) cuGraphDestroy.invokeExact(hGraph);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuGraphExecDestroy(MemorySegment hGraphExec) {
        try {
            return (int) cuGraphExecDestroy.invokeExact(hGraphExec);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuGraphExecUpdate_v2(MemorySegment hGraphExec, MemorySegment hGraph, MemorySegment resultInfo) {
        try {
            return (int) cuGraphExecUpdate_v2.invokeExact(hGraphExec, hGraph, resultInfo);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuGraphGetNodes(MemorySegment hGraph, MemorySegment nodes, MemorySegment numNodes) {
        try {
            return (int) cuGraphGetNodes.invokeExact(hGraph, nodes, numNodes);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuGraphNodeGetType(MemorySegment hNode, MemorySegment type) {
        try {
            return (int) cuGraphNodeGetType.invokeExact(hNode, type);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuGraphKernelNodeGetParams_v2(MemorySegment hNode, MemorySegment nodeParams) {
        try {
            return (int) cuGraphKernelNodeGetParams_v2.invokeExact(hNode, nodeParams);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }

    @Override
    public int cuGraphExecKernelNodeSetParams_v2(MemorySegment hGraphExec, MemorySegment hNode, MemorySegment nodeParams) {
        try {
            return (int) cuGraphExecKernelNodeSetParams_v2.invokeExact(hGraphExec, hNode, nodeParams);
        } catch (Throwable t) {
            throw Downcalls.rethrow(t);
        }
    }
}
