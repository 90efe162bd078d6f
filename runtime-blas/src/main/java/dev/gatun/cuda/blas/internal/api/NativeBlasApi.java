package dev.gatun.cuda.blas.internal.api;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.blas.internal.bindings.cublas.Cublas;
import dev.gatun.cuda.blas.internal.bindings.cublaslt.CublasLt;
import dev.gatun.cuda.blas.internal.bindings.cudnn.Cudnn;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * {@link BlasApi} over the generated bindings: each method is the library function of its name.
 * Safety: the bindings' descriptors are the headers' prototypes (jextract); what each call's
 * arguments must be is argued where {@link BlasCalls} makes it. A status name is a static C
 * string of the library, read up to its terminating NUL.
 */
public final class NativeBlasApi implements BlasApi {

    /** The one instance: the bindings keep no state of their own. */
    public static final NativeBlasApi INSTANCE = new NativeBlasApi();

    /** Longer than any status name or error string the libraries return. */
    private static final long MAX_NAME_BYTES = 4096;

    private NativeBlasApi() {
    }

    @Override
    public int cuCtxSetCurrent(MemorySegment context) {
        // Through the driver bindings, which resolve in the driver runtime-core opened. Safety: the
        // caller passes a context Gatun retained (CudaContext.handle(): a primary context, never
        // released), so it is valid for the process.
        return CudaDriver.cuCtxSetCurrent(context);
    }

    private static String name(MemorySegment cString) {
        return cString.equals(MemorySegment.NULL) ? "?" : cString.reinterpret(MAX_NAME_BYTES).getString(0);
    }

    @Override
    public long cublasLtGetVersion() {
        return CublasLt.cublasLtGetVersion();
    }

    @Override
    public String cublasLtGetStatusName(int status) {
        return name(CublasLt.cublasLtGetStatusName(status));
    }

    @Override
    public int cublasLtCreate(MemorySegment lightHandle) {
        return CublasLt.cublasLtCreate(lightHandle);
    }

    @Override
    public int cublasLtDestroy(MemorySegment lightHandle) {
        return CublasLt.cublasLtDestroy(lightHandle);
    }

    @Override
    public int cublasLtMatmulDescCreate(MemorySegment matmulDesc, int computeType, int scaleType) {
        return CublasLt.cublasLtMatmulDescCreate(matmulDesc, computeType, scaleType);
    }

    @Override
    public int cublasLtMatmulDescDestroy(MemorySegment matmulDesc) {
        return CublasLt.cublasLtMatmulDescDestroy(matmulDesc);
    }

    @Override
    public int cublasLtMatmulDescSetAttribute(MemorySegment matmulDesc, int attr, MemorySegment buf, long sizeInBytes) {
        return CublasLt.cublasLtMatmulDescSetAttribute(matmulDesc, attr, buf, sizeInBytes);
    }

    @Override
    public int cublasLtMatrixLayoutCreate(MemorySegment matLayout, int type, long rows, long cols, long ld) {
        return CublasLt.cublasLtMatrixLayoutCreate(matLayout, type, rows, cols, ld);
    }

    @Override
    public int cublasLtMatrixLayoutDestroy(MemorySegment matLayout) {
        return CublasLt.cublasLtMatrixLayoutDestroy(matLayout);
    }

    @Override
    public int cublasLtMatrixLayoutSetAttribute(MemorySegment matLayout, int attr, MemorySegment buf, long sizeInBytes) {
        return CublasLt.cublasLtMatrixLayoutSetAttribute(matLayout, attr, buf, sizeInBytes);
    }

    @Override
    public int cublasLtMatmulPreferenceCreate(MemorySegment pref) {
        return CublasLt.cublasLtMatmulPreferenceCreate(pref);
    }

    @Override
    public int cublasLtMatmulPreferenceDestroy(MemorySegment pref) {
        return CublasLt.cublasLtMatmulPreferenceDestroy(pref);
    }

    @Override
    public int cublasLtMatmulPreferenceSetAttribute(MemorySegment pref, int attr, MemorySegment buf, long sizeInBytes) {
        return CublasLt.cublasLtMatmulPreferenceSetAttribute(pref, attr, buf, sizeInBytes);
    }

    @Override
    public int cublasLtMatmulAlgoGetHeuristic(MemorySegment lightHandle, MemorySegment operationDesc, MemorySegment aDesc, MemorySegment bDesc, MemorySegment cDesc, MemorySegment dDesc, MemorySegment preference, int requestedAlgoCount, MemorySegment heuristicResultsArray, MemorySegment returnAlgoCount) {
        return CublasLt.cublasLtMatmulAlgoGetHeuristic(lightHandle, operationDesc, aDesc, bDesc, cDesc, dDesc, preference, requestedAlgoCount, heuristicResultsArray, returnAlgoCount);
    }

    @Override
    public int cublasLtMatmul(MemorySegment lightHandle, MemorySegment computeDesc, MemorySegment alpha, MemorySegment a, MemorySegment aDesc, MemorySegment b, MemorySegment bDesc, MemorySegment beta, MemorySegment c, MemorySegment cDesc, MemorySegment d, MemorySegment dDesc, MemorySegment algo, MemorySegment workspace, long workspaceSizeInBytes, MemorySegment stream) {
        return CublasLt.cublasLtMatmul(lightHandle, computeDesc, alpha, a, aDesc, b, bDesc, beta, c, cDesc, d, dDesc, algo, workspace, workspaceSizeInBytes, stream);
    }

    @Override
    public int cublasGetProperty(int type, MemorySegment value) {
        return Cublas.cublasGetProperty(type, value);
    }

    @Override
    public String cublasGetStatusName(int status) {
        return name(Cublas.cublasGetStatusName(status));
    }

    @Override
    public int cublasCreate_v2(MemorySegment handle) {
        return Cublas.cublasCreate_v2(handle);
    }

    @Override
    public int cublasDestroy_v2(MemorySegment handle) {
        return Cublas.cublasDestroy_v2(handle);
    }

    @Override
    public int cublasSetStream_v2(MemorySegment handle, MemorySegment stream) {
        return Cublas.cublasSetStream_v2(handle, stream);
    }

    @Override
    public int cublasSetWorkspace_v2(MemorySegment handle, MemorySegment workspace, long workspaceSizeInBytes) {
        return Cublas.cublasSetWorkspace_v2(handle, workspace, workspaceSizeInBytes);
    }

    @Override
    public int cublasGemmEx(MemorySegment handle, int transa, int transb, int m, int n, int k, MemorySegment alpha, MemorySegment a, int aType, int lda, MemorySegment b, int bType, int ldb, MemorySegment beta, MemorySegment c, int cType, int ldc, int computeType, int algo) {
        return Cublas.cublasGemmEx(handle, transa, transb, m, n, k, alpha, a, aType, lda, b, bType, ldb, beta, c, cType, ldc, computeType, algo);
    }

    @Override
    public int cublasGemmStridedBatchedEx(MemorySegment handle, int transa, int transb, int m, int n, int k, MemorySegment alpha, MemorySegment a, int aType, int lda, long strideA, MemorySegment b, int bType, int ldb, long strideB, MemorySegment beta, MemorySegment c, int cType, int ldc, long strideC, int batchCount, int computeType, int algo) {
        return Cublas.cublasGemmStridedBatchedEx(handle, transa, transb, m, n, k, alpha, a, aType, lda, strideA, b, bType, ldb, strideB, beta, c, cType, ldc, strideC, batchCount, computeType, algo);
    }

    @Override
    public long cudnnGetVersion() {
        return Cudnn.cudnnGetVersion();
    }

    @Override
    public String cudnnGetErrorString(int status) {
        return name(Cudnn.cudnnGetErrorString(status));
    }

    @Override
    public int cudnnCreate(MemorySegment handle) {
        return Cudnn.cudnnCreate(handle);
    }

    @Override
    public int cudnnDestroy(MemorySegment handle) {
        return Cudnn.cudnnDestroy(handle);
    }

    @Override
    public int cudnnSetStream(MemorySegment handle, MemorySegment stream) {
        return Cudnn.cudnnSetStream(handle, stream);
    }

    @Override
    public int cudnnCreateTensorDescriptor(MemorySegment tensorDesc) {
        return Cudnn.cudnnCreateTensorDescriptor(tensorDesc);
    }

    @Override
    public int cudnnSetTensor4dDescriptor(MemorySegment tensorDesc, int format, int dataType, int n, int c, int h, int w) {
        return Cudnn.cudnnSetTensor4dDescriptor(tensorDesc, format, dataType, n, c, h, w);
    }

    @Override
    public int cudnnDestroyTensorDescriptor(MemorySegment tensorDesc) {
        return Cudnn.cudnnDestroyTensorDescriptor(tensorDesc);
    }

    @Override
    public int cudnnSoftmaxForward(MemorySegment handle, int algo, int mode, MemorySegment alpha, MemorySegment xDesc, MemorySegment x, MemorySegment beta, MemorySegment yDesc, MemorySegment y) {
        return Cudnn.cudnnSoftmaxForward(handle, algo, mode, alpha, xDesc, x, beta, yDesc, y);
    }

    /** Longer than any detail cuDNN writes (its own buffer is 256 bytes in 9.x). */
    private static final long MAX_DETAIL_BYTES = 1024;

    @Override
    public String cudnnGetLastErrorString() {
        // Safety: cuDNN writes at most max_size bytes, NUL-terminated, into the confined buffer.
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment message = arena.allocate(MAX_DETAIL_BYTES);
            Cudnn.cudnnGetLastErrorString(message, MAX_DETAIL_BYTES);
            return message.getString(0);
        }
    }

    @Override
    public int cudnnBackendCreateDescriptor(int descriptorType, MemorySegment descriptor) {
        return Cudnn.cudnnBackendCreateDescriptor(descriptorType, descriptor);
    }

    @Override
    public int cudnnBackendDestroyDescriptor(MemorySegment descriptor) {
        return Cudnn.cudnnBackendDestroyDescriptor(descriptor);
    }

    @Override
    public int cudnnBackendSetAttribute(MemorySegment descriptor, int attributeName, int attributeType,
            long elementCount, MemorySegment arrayOfElements) {
        return Cudnn.cudnnBackendSetAttribute(descriptor, attributeName, attributeType, elementCount, arrayOfElements);
    }

    @Override
    public int cudnnBackendGetAttribute(MemorySegment descriptor, int attributeName, int attributeType,
            long requestedElementCount, MemorySegment elementCount, MemorySegment arrayOfElements) {
        return Cudnn.cudnnBackendGetAttribute(descriptor, attributeName, attributeType, requestedElementCount,
                elementCount, arrayOfElements);
    }

    @Override
    public int cudnnBackendFinalize(MemorySegment descriptor) {
        return Cudnn.cudnnBackendFinalize(descriptor);
    }

    @Override
    public int cudnnBackendExecute(MemorySegment handle, MemorySegment executionPlan, MemorySegment variantPack) {
        return Cudnn.cudnnBackendExecute(handle, executionPlan, variantPack);
    }
}
