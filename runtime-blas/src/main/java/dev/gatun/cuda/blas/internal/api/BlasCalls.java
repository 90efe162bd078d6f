package dev.gatun.cuda.blas.internal.api;

import dev.gatun.cuda.blas.BlasException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The checked layer over {@link BlasApi}, as runtime-core's {@code Checked} is over the driver:
 * each call names its operation, owns its out-parameters and turns a failure status into a
 * {@link BlasException} carrying the library's status name. It is the one place this module calls
 * the libraries, and where the CPU tests' fake injects failures. The calls that create or destroy
 * (rare) use an arena per call; the calls a GEMM makes allocate nothing.
 */
public final class BlasCalls {

    /** {@code libraryPropertyType}: MAJOR_VERSION, MINOR_VERSION (library_types.h). */
    public static final int MAJOR = 0;
    public static final int MINOR = 1;

    private static final String LT = "cuBLASLt";
    private static final String BLAS = "cuBLAS";
    private static final String DNN = "cuDNN";

    private final BlasApi api;

    public BlasCalls(BlasApi api) {
        this.api = api;
    }

    /** {@return the seam, for the tests' call counts} */
    public BlasApi api() {
        return api;
    }

    private void check(int status, String library, String operation) {
        if (status != 0) {
            throw failure(status, library, operation);
        }
    }

    /** The exception for {@code status}, named by the library itself (a name it cannot give is "?"). */
    public BlasException failure(int status, String library, String operation) {
        String name;
        try {
            name = switch (library) {
                case LT -> api.cublasLtGetStatusName(status);
                case BLAS -> api.cublasGetStatusName(status);
                default -> api.cudnnGetErrorString(status);
            };
        } catch (RuntimeException e) {
            name = "? (the library could not name it: " + e.getMessage() + ")";
        }
        return new BlasException(library, operation, status, name);
    }

    /** Creates with {@code create} (its out-parameter is one pointer) and returns what it wrote. */
    private MemorySegment created(Creation create, String library, String operation) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
            // Safety: out holds the one pointer the function writes, alive across the call.
            check(create.apply(out), library, operation);
            return out.get(ValueLayout.ADDRESS, 0);
        }
    }

    @FunctionalInterface
    private interface Creation {
        int apply(MemorySegment out);
    }

    // versions

    /** {@return cuBLASLt's version, major * 10000 + minor * 100 + patch} */
    public long cublasLtVersion() {
        return api.cublasLtGetVersion();
    }

    /** {@return cuBLAS's version property {@link #MAJOR} or {@link #MINOR}} */
    public int cublasProperty(int type) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ValueLayout.JAVA_INT);
            // Safety: out holds the one int the function writes.
            check(api.cublasGetProperty(type, out), BLAS, "cublasGetProperty");
            return out.get(ValueLayout.JAVA_INT, 0);
        }
    }

    /** {@return cuDNN's version, major * 10000 + minor * 100 + patch (cuDNN 9)} */
    public long cudnnVersion() {
        return api.cudnnGetVersion();
    }

    // handles

    /**
     * Makes {@code context} current on this thread for the create or destroy that follows, with
     * nothing that can park in between (a virtual thread keeps its carrier until it parks).
     */
    public void makeCurrent(MemorySegment context, String operation) {
        int r = api.cuCtxSetCurrent(context);
        if (r != 0) {
            throw new IllegalStateException("cuCtxSetCurrent failed with CUresult " + r + " before " + operation
                    + "; the context is unusable (poisoned or destroyed)");
        }
    }

    public MemorySegment cublasLtCreate() {
        return created(api::cublasLtCreate, LT, "cublasLtCreate");
    }

    public int cublasLtDestroy(MemorySegment handle) {
        return api.cublasLtDestroy(handle);
    }

    public MemorySegment cublasCreate() {
        return created(api::cublasCreate_v2, BLAS, "cublasCreate");
    }

    public int cublasDestroy(MemorySegment handle) {
        return api.cublasDestroy_v2(handle);
    }

    public MemorySegment cudnnCreate() {
        return created(api::cudnnCreate, DNN, "cudnnCreate");
    }

    public int cudnnDestroy(MemorySegment handle) {
        return api.cudnnDestroy(handle);
    }

    // cuBLASLt descriptors

    public MemorySegment matmulDesc(int computeType, int scaleType) {
        return created(out -> api.cublasLtMatmulDescCreate(out, computeType, scaleType), LT, "cublasLtMatmulDescCreate");
    }

    public int matmulDescDestroy(MemorySegment desc) {
        return api.cublasLtMatmulDescDestroy(desc);
    }

    /** Sets a matmul descriptor's attribute from {@code value} (host memory, read during the call). */
    public void matmulDescSet(MemorySegment desc, int attribute, MemorySegment value) {
        check(api.cublasLtMatmulDescSetAttribute(desc, attribute, value, value.byteSize()), LT,
                "cublasLtMatmulDescSetAttribute");
    }

    public MemorySegment layout(int type, long rows, long cols, long ld) {
        return created(out -> api.cublasLtMatrixLayoutCreate(out, type, rows, cols, ld), LT,
                "cublasLtMatrixLayoutCreate");
    }

    public int layoutDestroy(MemorySegment layout) {
        return api.cublasLtMatrixLayoutDestroy(layout);
    }

    public void layoutSet(MemorySegment layout, int attribute, MemorySegment value) {
        check(api.cublasLtMatrixLayoutSetAttribute(layout, attribute, value, value.byteSize()), LT,
                "cublasLtMatrixLayoutSetAttribute");
    }

    public MemorySegment preference() {
        return created(api::cublasLtMatmulPreferenceCreate, LT, "cublasLtMatmulPreferenceCreate");
    }

    public int preferenceDestroy(MemorySegment preference) {
        return api.cublasLtMatmulPreferenceDestroy(preference);
    }

    public void preferenceSet(MemorySegment preference, int attribute, MemorySegment value) {
        check(api.cublasLtMatmulPreferenceSetAttribute(preference, attribute, value, value.byteSize()), LT,
                "cublasLtMatmulPreferenceSetAttribute");
    }

    /**
     * Asks the heuristic for one algorithm; writes its result into {@code result} (a
     * {@code cublasLtMatmulHeuristicResult_t}).
     *
     * @return whether it found one
     */
    public boolean heuristic(MemorySegment lt, MemorySegment desc, MemorySegment aLayout, MemorySegment bLayout,
            MemorySegment dLayout, MemorySegment preference, MemorySegment result) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment count = arena.allocate(ValueLayout.JAVA_INT);
            // Safety: result holds one heuristic result struct and count one int; every descriptor
            // is live (the plan being prepared owns them).
            check(api.cublasLtMatmulAlgoGetHeuristic(lt, desc, aLayout, bLayout, dLayout, dLayout, preference, 1, result,
                    count), LT, "cublasLtMatmulAlgoGetHeuristic");
            return count.get(ValueLayout.JAVA_INT, 0) > 0;
        }
    }

    /** cublasLtMatmul with C = D (in place). See {@code Matmul} for why each argument is valid. */
    public void matmul(MemorySegment lt, MemorySegment desc, MemorySegment alpha, MemorySegment a, MemorySegment aLayout,
            MemorySegment b, MemorySegment bLayout, MemorySegment beta, MemorySegment d, MemorySegment dLayout,
            MemorySegment algo, MemorySegment workspace, long workspaceBytes, MemorySegment stream) {
        check(api.cublasLtMatmul(lt, desc, alpha, a, aLayout, b, bLayout, beta, d, dLayout, d, dLayout, algo, workspace,
                workspaceBytes, stream), LT, "cublasLtMatmul");
    }

    // cuBLAS

    public void cublasBind(MemorySegment handle, MemorySegment stream, MemorySegment workspace, long workspaceBytes) {
        check(api.cublasSetStream_v2(handle, stream), BLAS, "cublasSetStream");
        // After the stream: cublasSetStream resets the handle's workspace to cuBLAS's own pool.
        check(api.cublasSetWorkspace_v2(handle, workspace, workspaceBytes), BLAS, "cublasSetWorkspace");
    }

    public void gemmEx(MemorySegment handle, int transa, int transb, int m, int n, int k, MemorySegment alpha,
            MemorySegment a, int aType, int lda, MemorySegment b, int bType, int ldb, MemorySegment beta,
            MemorySegment c, int cType, int ldc, int computeType, int algo) {
        check(api.cublasGemmEx(handle, transa, transb, m, n, k, alpha, a, aType, lda, b, bType, ldb, beta, c, cType, ldc,
                computeType, algo), BLAS, "cublasGemmEx");
    }

    public void gemmStridedBatchedEx(MemorySegment handle, int transa, int transb, int m, int n, int k,
            MemorySegment alpha, MemorySegment a, int aType, int lda, long strideA, MemorySegment b, int bType, int ldb,
            long strideB, MemorySegment beta, MemorySegment c, int cType, int ldc, long strideC, int batchCount,
            int computeType, int algo) {
        check(api.cublasGemmStridedBatchedEx(handle, transa, transb, m, n, k, alpha, a, aType, lda, strideA, b, bType,
                ldb, strideB, beta, c, cType, ldc, strideC, batchCount, computeType, algo), BLAS,
                "cublasGemmStridedBatchedEx");
    }

    // cuDNN

    public void cudnnBind(MemorySegment handle, MemorySegment stream) {
        check(api.cudnnSetStream(handle, stream), DNN, "cudnnSetStream");
    }

    public MemorySegment tensor4d(int format, int dataType, int n, int c, int h, int w) {
        MemorySegment desc = created(api::cudnnCreateTensorDescriptor, DNN, "cudnnCreateTensorDescriptor");
        int r = api.cudnnSetTensor4dDescriptor(desc, format, dataType, n, c, h, w);
        if (r != 0) {
            api.cudnnDestroyTensorDescriptor(desc); // the failure reported is the set's
            throw failure(r, DNN, "cudnnSetTensor4dDescriptor");
        }
        return desc;
    }

    public int tensorDestroy(MemorySegment desc) {
        return api.cudnnDestroyTensorDescriptor(desc);
    }

    public void softmax(MemorySegment handle, int algo, int mode, MemorySegment alpha, MemorySegment xDesc,
            MemorySegment x, MemorySegment beta, MemorySegment yDesc, MemorySegment y) {
        check(api.cudnnSoftmaxForward(handle, algo, mode, alpha, xDesc, x, beta, yDesc, y), DNN, "cudnnSoftmaxForward");
    }

    // cuDNN's backend (graph) API: descriptors made, set and finalized while an attention is
    // prepared (or its variant pack rebuilt), one execute per run.

    /** {@return cuDNN's detail of this thread's last failure, "" when it has none (or cannot say)} */
    public String cudnnLastError() {
        try {
            return api.cudnnGetLastErrorString();
        } catch (RuntimeException e) {
            return "";
        }
    }

    /**
     * A failure of {@code status} with cuDNN's own {@code detail} (its last error string, read
     * right after the failure) and {@code advice} (what the caller can change).
     */
    public BlasException cudnnFailure(int status, String operation, String detail, String advice) {
        BlasException named = failure(status, DNN, operation);
        return new BlasException(DNN, operation, status, named.statusName(),
                (detail.isEmpty() ? "" : "cuDNN says \"" + detail + "\"; ") + advice);
    }

    /** A new backend descriptor of {@code type} ({@code CUDNN_BACKEND_*_DESCRIPTOR}); {@code what} names it in errors. */
    public MemorySegment backendCreate(int type, String what) {
        return created(out -> api.cudnnBackendCreateDescriptor(type, out), DNN, "cudnnBackendCreateDescriptor(" + what
                + ")");
    }

    public int backendDestroy(MemorySegment descriptor) {
        return api.cudnnBackendDestroyDescriptor(descriptor);
    }

    /**
     * Sets attribute {@code name} of {@code descriptor} to the {@code count} elements of {@code type} in
     * {@code values} (host memory, copied by cuDNN during the call).
     */
    public void backendSet(MemorySegment descriptor, int name, int type, long count, MemorySegment values, String what) {
        check(api.cudnnBackendSetAttribute(descriptor, name, type, count, values), DNN, "cudnnBackendSetAttribute(" + what
                + ")");
    }

    public void backendFinalize(MemorySegment descriptor, String what) {
        check(api.cudnnBackendFinalize(descriptor), DNN, "cudnnBackendFinalize(" + what + ")");
    }

    /** Finalizes {@code descriptor} and returns the status unchecked: an engine configuration may refuse a graph. */
    public int backendTryFinalize(MemorySegment descriptor) {
        return api.cudnnBackendFinalize(descriptor);
    }

    /**
     * Reads up to {@code requested} elements of attribute {@code name} into {@code values} (null
     * with {@code requested} 0: only the count); returns how many cuDNN has.
     */
    public long backendGet(MemorySegment descriptor, int name, int type, long requested, MemorySegment values,
            String what) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment count = arena.allocate(ValueLayout.JAVA_LONG);
            // Safety: count holds the one int64 cuDNN writes, values room for the requested elements.
            check(api.cudnnBackendGetAttribute(descriptor, name, type, requested, count,
                    values == null ? MemorySegment.NULL : values), DNN, "cudnnBackendGetAttribute(" + what + ")");
            return count.get(ValueLayout.JAVA_LONG, 0);
        }
    }

    /** The warm call of an attention. See {@code Attention} for why each argument is valid. */
    public void backendExecute(MemorySegment handle, MemorySegment plan, MemorySegment variantPack) {
        check(api.cudnnBackendExecute(handle, plan, variantPack), DNN, "cudnnBackendExecute");
    }
}
