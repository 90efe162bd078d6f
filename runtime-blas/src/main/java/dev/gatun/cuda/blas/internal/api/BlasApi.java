package dev.gatun.cuda.blas.internal.api;

import java.lang.foreign.MemorySegment;

/**
 * The seam between this module and cuBLASLt, cuBLAS and cuDNN: exactly the library functions it
 * calls, with the generated bindings' signatures (each named as its C function). The native
 * implementation ({@link NativeBlasApi}) calls the bindings; the CPU tests' fake records calls,
 * reports any version and returns any status, as runtime-core's simulated driver does for
 * {@code DriverApi}. Only {@link BlasCalls} calls it.
 *
 * <p>Status names come from the libraries themselves ({@code cublasLtGetStatusName},
 * {@code cublasGetStatusName}, {@code cudnnGetErrorString}), read as Java strings.
 */
public interface BlasApi {

    // the driver

    /**
     * Makes {@code context} current on the calling thread ({@code cuCtxSetCurrent}), before a
     * handle is created or destroyed: the libraries bind a handle to the current context. A
     * submission does not need this: {@code Stream.submitForeign} makes the context current.
     */
    int cuCtxSetCurrent(MemorySegment context);

    // cuBLASLt

    long cublasLtGetVersion();

    String cublasLtGetStatusName(int status);

    int cublasLtCreate(MemorySegment lightHandle);

    int cublasLtDestroy(MemorySegment lightHandle);

    int cublasLtMatmulDescCreate(MemorySegment matmulDesc, int computeType, int scaleType);

    int cublasLtMatmulDescDestroy(MemorySegment matmulDesc);

    int cublasLtMatmulDescSetAttribute(MemorySegment matmulDesc, int attr, MemorySegment buf, long sizeInBytes);

    int cublasLtMatrixLayoutCreate(MemorySegment matLayout, int type, long rows, long cols, long ld);

    int cublasLtMatrixLayoutDestroy(MemorySegment matLayout);

    int cublasLtMatrixLayoutSetAttribute(MemorySegment matLayout, int attr, MemorySegment buf, long sizeInBytes);

    int cublasLtMatmulPreferenceCreate(MemorySegment pref);

    int cublasLtMatmulPreferenceDestroy(MemorySegment pref);

    int cublasLtMatmulPreferenceSetAttribute(MemorySegment pref, int attr, MemorySegment buf, long sizeInBytes);

    int cublasLtMatmulAlgoGetHeuristic(MemorySegment lightHandle, MemorySegment operationDesc, MemorySegment aDesc,
            MemorySegment bDesc, MemorySegment cDesc, MemorySegment dDesc, MemorySegment preference,
            int requestedAlgoCount, MemorySegment heuristicResultsArray, MemorySegment returnAlgoCount);

    int cublasLtMatmul(MemorySegment lightHandle, MemorySegment computeDesc, MemorySegment alpha, MemorySegment a,
            MemorySegment aDesc, MemorySegment b, MemorySegment bDesc, MemorySegment beta, MemorySegment c,
            MemorySegment cDesc, MemorySegment d, MemorySegment dDesc, MemorySegment algo, MemorySegment workspace,
            long workspaceSizeInBytes, MemorySegment stream);

    // cuBLAS

    int cublasGetProperty(int type, MemorySegment value);

    String cublasGetStatusName(int status);

    int cublasCreate_v2(MemorySegment handle);

    int cublasDestroy_v2(MemorySegment handle);

    int cublasSetStream_v2(MemorySegment handle, MemorySegment stream);

    int cublasSetWorkspace_v2(MemorySegment handle, MemorySegment workspace, long workspaceSizeInBytes);

    int cublasGemmEx(MemorySegment handle, int transa, int transb, int m, int n, int k, MemorySegment alpha,
            MemorySegment a, int aType, int lda, MemorySegment b, int bType, int ldb, MemorySegment beta,
            MemorySegment c, int cType, int ldc, int computeType, int algo);

    int cublasGemmStridedBatchedEx(MemorySegment handle, int transa, int transb, int m, int n, int k,
            MemorySegment alpha, MemorySegment a, int aType, int lda, long strideA, MemorySegment b, int bType, int ldb,
            long strideB, MemorySegment beta, MemorySegment c, int cType, int ldc, long strideC, int batchCount,
            int computeType, int algo);

    // cuDNN

    long cudnnGetVersion();

    String cudnnGetErrorString(int status);

    int cudnnCreate(MemorySegment handle);

    int cudnnDestroy(MemorySegment handle);

    int cudnnSetStream(MemorySegment handle, MemorySegment stream);

    int cudnnCreateTensorDescriptor(MemorySegment tensorDesc);

    int cudnnSetTensor4dDescriptor(MemorySegment tensorDesc, int format, int dataType, int n, int c, int h, int w);

    int cudnnDestroyTensorDescriptor(MemorySegment tensorDesc);

    int cudnnSoftmaxForward(MemorySegment handle, int algo, int mode, MemorySegment alpha, MemorySegment xDesc,
            MemorySegment x, MemorySegment beta, MemorySegment yDesc, MemorySegment y);

    /** The detail of the thread's last cuDNN failure ({@code cudnnGetLastErrorString}), "" when none. */
    String cudnnGetLastErrorString();

    // cuDNN's backend (graph) API

    int cudnnBackendCreateDescriptor(int descriptorType, MemorySegment descriptor);

    int cudnnBackendDestroyDescriptor(MemorySegment descriptor);

    int cudnnBackendSetAttribute(MemorySegment descriptor, int attributeName, int attributeType, long elementCount,
            MemorySegment arrayOfElements);

    int cudnnBackendGetAttribute(MemorySegment descriptor, int attributeName, int attributeType,
            long requestedElementCount, MemorySegment elementCount, MemorySegment arrayOfElements);

    int cudnnBackendFinalize(MemorySegment descriptor);

    int cudnnBackendExecute(MemorySegment handle, MemorySegment executionPlan, MemorySegment variantPack);
}
