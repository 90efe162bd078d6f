package dev.gatun.cuda.blas;

import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.blas.internal.api.BlasApi;
import dev.gatun.cuda.blas.internal.bindings.cublaslt.cublasLtMatmulHeuristicResult_t;
import dev.gatun.cuda.blas.internal.bindings.cudnn.Cudnn;
import dev.gatun.cuda.internal.driver.DriverApi;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Simulated cuBLASLt, cuBLAS and cuDNN behind {@link BlasApi}: versions to report, handles and
 * descriptors as counted fake addresses (live ones listed, so a test sees leaks), every call
 * counted with its last arguments, a status to return from any function, a pause inside one.
 * Its GEMMs and softmax "run" as the simulated driver's {@code cuMemsetD32Async} over D's (y's)
 * first word on the stream they are given, so the simulated GPU orders them and reports a use of
 * freed memory.
 */
final class FakeBlasApi implements BlasApi {

    long ltVersion = 130100;
    int cublasMajor = 13;
    int cublasMinor = 1;
    long cudnnVersion = 91400;
    /** Thrown by every version read when set: the library could not be loaded. */
    CudaUnavailableException unavailable;
    long algorithmWorkspaceBytes = 1 << 20;
    /** The workspace an attention's execution plan reports. */
    long planWorkspaceBytes = 1 << 20;
    /** The engine configurations the attention heuristic offers. */
    int engineConfigs = 2;
    /** How many execution plans (the next ones finalized) refuse their engine configuration. */
    int refusingPlans;
    /** cuDNN's detail of the last failure ({@code cudnnGetLastErrorString}). */
    String lastError = "";
    /** The simulated driver call each GEMM and softmax makes in place of the library's kernels. */
    static final String KERNEL = "cuMemsetD32Async";

    private final DriverApi gpu;
    private final Map<String, Integer> calls = new HashMap<>();
    private final Map<String, Object[]> lastArguments = new HashMap<>();
    private final Map<String, Integer> failures = new HashMap<>();
    private final Set<Long> live = new HashSet<>();
    /** The type of each backend descriptor made ({@code CUDNN_BACKEND_*_DESCRIPTOR}). */
    private final Map<Long, Integer> descriptorTypes = new HashMap<>();
    /** Each variant pack's uids, data pointers and workspace, as set. */
    private final Map<Long, VariantPack> packs = new HashMap<>();
    /** Per descriptor, attribute name to the longs (or ints) set. */
    private final Map<Long, Map<Integer, long[]>> attributes = new HashMap<>();

    /** What a variant pack was given. */
    record VariantPack(long[] uids, long[] pointers, long workspace) {
        long pointer(long uid) {
            for (int i = 0; i < uids.length; i++) {
                if (uids[i] == uid) {
                    return pointers[i];
                }
            }
            throw new AssertionError("the variant pack has no uid " + uid);
        }
    }
    /** The functions of a GEMM or softmax called with a segment argument of an arena's scope (not the global one). */
    private final Set<String> scoped = new HashSet<>();
    private long nextHandle = 0x1000;
    private volatile Pause pause;

    FakeBlasApi(DriverApi gpu) {
        this.gpu = gpu;
    }

    /** A thread held inside a function until released. */
    static final class Pause {
        final String function;
        final CountDownLatch arrived = new CountDownLatch(1);
        final CountDownLatch released = new CountDownLatch(1);

        Pause(String function) {
            this.function = function;
        }

        void awaitArrival() {
            await(arrived);
        }

        void release() {
            released.countDown();
        }

        private static void await(CountDownLatch latch) {
            try {
                if (!latch.await(10, TimeUnit.SECONDS)) {
                    throw new AssertionError("the pause was not reached in 10 s (a deadlock guard)");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
        }
    }

    synchronized Pause pauseIn(String function) {
        Pause p = new Pause(function);
        pause = p;
        return p;
    }

    /** Makes {@code function} return {@code status} from now on (0: succeed again). */
    synchronized void fail(String function, int status) {
        failures.put(function, status);
    }

    synchronized int calls(String function) {
        return calls.getOrDefault(function, 0);
    }

    synchronized Map<String, Integer> counts() {
        return Map.copyOf(calls);
    }

    synchronized Object[] last(String function) {
        return lastArguments.get(function);
    }

    synchronized int liveObjects() {
        return live.size();
    }

    /** {@return the live backend descriptors of {@code type}} */
    synchronized long liveDescriptors(int type) {
        return descriptorTypes.entrySet().stream().filter(e -> e.getValue() == type && live.contains(e.getKey())).count();
    }

    /** {@return how many backend descriptors of {@code type} were ever made, destroyed ones included} */
    synchronized long createdDescriptors(int type) {
        return descriptorTypes.values().stream().filter(t -> t == type).count();
    }

    /** {@return the variant pack {@code cudnnBackendExecute} last ran} */
    synchronized VariantPack lastPack() {
        return packs.get((Long) lastArguments.get("cudnnBackendExecute")[1]);
    }

    /** {@return the values of attribute {@code name} of every live descriptor of {@code type} that has it} */
    synchronized List<long[]> attribute(int type, int name) {
        return descriptorTypes.entrySet().stream()
                .filter(e -> e.getValue() == type && live.contains(e.getKey()))
                .map(e -> attributes.getOrDefault(e.getKey(), Map.of()).get(name)).filter(v -> v != null).toList();
    }

    /**
     * {@return the functions called so far with a segment argument not of the global scope: a
     * downcall acquires and releases such a segment's arena session around the call (two atomic
     * updates each), which the warm path avoids}
     */
    synchronized Set<String> calledWithArenaSegments() {
        return Set.copyOf(scoped);
    }

    private void noteScopes(String function, MemorySegment... arguments) {
        for (MemorySegment m : arguments) {
            if (!m.scope().equals(GLOBAL)) {
                synchronized (this) {
                    scoped.add(function);
                }
                return;
            }
        }
    }

    private static final MemorySegment.Scope GLOBAL = MemorySegment.NULL.scope();

    private int call(String function, Object... arguments) {
        Pause p;
        int status;
        synchronized (this) {
            calls.merge(function, 1, Integer::sum);
            lastArguments.put(function, arguments);
            status = failures.getOrDefault(function, 0);
            p = pause != null && pause.function.equals(function) ? pause : null;
            if (p != null) {
                pause = null;
            }
        }
        if (p != null) {
            p.arrived.countDown();
            Pause.await(p.released);
        }
        return status;
    }

    private int create(String function, MemorySegment out, Object... arguments) {
        int status = call(function, arguments);
        if (status == 0) {
            synchronized (this) {
                long h = nextHandle += 0x10;
                live.add(h);
                out.reinterpret(8).set(ValueLayout.JAVA_LONG, 0, h);
            }
        }
        return status;
    }

    private int destroy(String function, MemorySegment handle) {
        int status = call(function, handle.address());
        synchronized (this) {
            if (!live.remove(handle.address())) {
                throw new AssertionError(function + " of an object that is not live: 0x" + Long.toHexString(handle.address()));
            }
        }
        return status;
    }

    /** The library's kernel: writes D's first word on the stream, so the simulated GPU tracks the use. */
    private int runs(int status, MemorySegment d, MemorySegment stream) {
        if (status == 0 && gpu != null) {
            int r = gpu.cuMemsetD32Async(d.address(), 0x3f800000, 1, stream);
            if (r != 0) {
                throw new AssertionError("the simulated kernel failed: " + r);
            }
        }
        return status;
    }

    private void version() {
        if (unavailable != null) {
            throw unavailable.again();
        }
    }

    @Override
    public int cuCtxSetCurrent(MemorySegment context) {
        return call("cuCtxSetCurrent", context.address());
    }

    @Override
    public long cublasLtGetVersion() {
        version();
        call("cublasLtGetVersion");
        return ltVersion;
    }

    @Override
    public String cublasLtGetStatusName(int status) {
        return name(status);
    }

    @Override
    public String cublasGetStatusName(int status) {
        return name(status);
    }

    private static String name(int status) {
        return switch (status) {
            case 7 -> "CUBLAS_STATUS_INVALID_VALUE";
            case 13 -> "CUBLAS_STATUS_EXECUTION_FAILED";
            case 15 -> "CUBLAS_STATUS_NOT_SUPPORTED";
            default -> "CUBLAS_STATUS_" + status;
        };
    }

    @Override
    public int cublasLtCreate(MemorySegment lightHandle) {
        return create("cublasLtCreate", lightHandle);
    }

    @Override
    public int cublasLtDestroy(MemorySegment lightHandle) {
        return destroy("cublasLtDestroy", lightHandle);
    }

    @Override
    public int cublasLtMatmulDescCreate(MemorySegment matmulDesc, int computeType, int scaleType) {
        return create("cublasLtMatmulDescCreate", matmulDesc, computeType, scaleType);
    }

    @Override
    public int cublasLtMatmulDescDestroy(MemorySegment matmulDesc) {
        return destroy("cublasLtMatmulDescDestroy", matmulDesc);
    }

    @Override
    public int cublasLtMatmulDescSetAttribute(MemorySegment matmulDesc, int attr, MemorySegment buf, long sizeInBytes) {
        MemorySegment value = buf.reinterpret(sizeInBytes);
        long v = sizeInBytes == 8 ? value.get(ValueLayout.JAVA_LONG, 0) : value.get(ValueLayout.JAVA_INT, 0);
        return call("cublasLtMatmulDescSetAttribute", matmulDesc.address(), attr, v, sizeInBytes);
    }

    @Override
    public int cublasLtMatrixLayoutCreate(MemorySegment matLayout, int type, long rows, long cols, long ld) {
        return create("cublasLtMatrixLayoutCreate", matLayout, type, rows, cols, ld);
    }

    @Override
    public int cublasLtMatrixLayoutDestroy(MemorySegment matLayout) {
        return destroy("cublasLtMatrixLayoutDestroy", matLayout);
    }

    @Override
    public int cublasLtMatrixLayoutSetAttribute(MemorySegment matLayout, int attr, MemorySegment buf, long sizeInBytes) {
        return call("cublasLtMatrixLayoutSetAttribute", matLayout.address(), attr, sizeInBytes);
    }

    @Override
    public int cublasLtMatmulPreferenceCreate(MemorySegment pref) {
        return create("cublasLtMatmulPreferenceCreate", pref);
    }

    @Override
    public int cublasLtMatmulPreferenceDestroy(MemorySegment pref) {
        return destroy("cublasLtMatmulPreferenceDestroy", pref);
    }

    @Override
    public int cublasLtMatmulPreferenceSetAttribute(MemorySegment pref, int attr, MemorySegment buf, long sizeInBytes) {
        return call("cublasLtMatmulPreferenceSetAttribute", pref.address(), attr, sizeInBytes);
    }

    @Override
    public int cublasLtMatmulAlgoGetHeuristic(MemorySegment lightHandle, MemorySegment operationDesc,
            MemorySegment aDesc, MemorySegment bDesc, MemorySegment cDesc, MemorySegment dDesc,
            MemorySegment preference, int requestedAlgoCount, MemorySegment heuristicResultsArray,
            MemorySegment returnAlgoCount) {
        int status = call("cublasLtMatmulAlgoGetHeuristic", requestedAlgoCount);
        if (status == 0) {
            cublasLtMatmulHeuristicResult_t.workspaceSize(heuristicResultsArray, algorithmWorkspaceBytes);
            returnAlgoCount.set(ValueLayout.JAVA_INT, 0, 1);
        }
        return status;
    }

    @Override
    public int cublasLtMatmul(MemorySegment lightHandle, MemorySegment computeDesc, MemorySegment alpha,
            MemorySegment a, MemorySegment aDesc, MemorySegment b, MemorySegment bDesc, MemorySegment beta,
            MemorySegment c, MemorySegment cDesc, MemorySegment d, MemorySegment dDesc, MemorySegment algo,
            MemorySegment workspace, long workspaceSizeInBytes, MemorySegment stream) {
        noteScopes("cublasLtMatmul", lightHandle, computeDesc, alpha, a, aDesc, b, bDesc, beta, c, cDesc, d, dDesc, algo,
                workspace, stream);
        return runs(call("cublasLtMatmul", a.address(), b.address(), c.address(), d.address(), workspace.address(),
                workspaceSizeInBytes, stream.address()), d, stream);
    }

    @Override
    public int cublasGetProperty(int type, MemorySegment value) {
        version();
        int status = call("cublasGetProperty", type);
        value.set(ValueLayout.JAVA_INT, 0, type == 0 ? cublasMajor : cublasMinor);
        return status;
    }

    @Override
    public int cublasCreate_v2(MemorySegment handle) {
        return create("cublasCreate_v2", handle);
    }

    @Override
    public int cublasDestroy_v2(MemorySegment handle) {
        return destroy("cublasDestroy_v2", handle);
    }

    @Override
    public int cublasSetStream_v2(MemorySegment handle, MemorySegment stream) {
        noteScopes("cublasSetStream_v2", handle, stream);
        return call("cublasSetStream_v2", handle.address(), stream.address());
    }

    @Override
    public int cublasSetWorkspace_v2(MemorySegment handle, MemorySegment workspace, long workspaceSizeInBytes) {
        noteScopes("cublasSetWorkspace_v2", handle, workspace);
        return call("cublasSetWorkspace_v2", handle.address(), workspace.address(), workspaceSizeInBytes);
    }

    @Override
    public int cublasGemmEx(MemorySegment handle, int transa, int transb, int m, int n, int k, MemorySegment alpha,
            MemorySegment a, int aType, int lda, MemorySegment b, int bType, int ldb, MemorySegment beta,
            MemorySegment c, int cType, int ldc, int computeType, int algo) {
        noteScopes("cublasGemmEx", handle, alpha, a, b, beta, c);
        return runs(call("cublasGemmEx", transa, transb, m, n, k, a.address(), aType, lda, b.address(), bType, ldb,
                c.address(), cType, ldc, computeType, alpha.get(ValueLayout.JAVA_FLOAT, 0)), c, current(handle));
    }

    @Override
    public int cublasGemmStridedBatchedEx(MemorySegment handle, int transa, int transb, int m, int n, int k,
            MemorySegment alpha, MemorySegment a, int aType, int lda, long strideA, MemorySegment b, int bType, int ldb,
            long strideB, MemorySegment beta, MemorySegment c, int cType, int ldc, long strideC, int batchCount,
            int computeType, int algo) {
        noteScopes("cublasGemmStridedBatchedEx", handle, alpha, a, b, beta, c);
        return runs(call("cublasGemmStridedBatchedEx", transa, transb, m, n, k, lda, strideA, ldb, strideB, ldc, strideC,
                batchCount, computeType), c, current(handle));
    }

    /** The stream the cuBLAS handle was last bound to. */
    private synchronized MemorySegment current(MemorySegment handle) {
        Object[] bound = lastArguments.get("cublasSetStream_v2");
        return MemorySegment.ofAddress((Long) bound[1]);
    }

    @Override
    public long cudnnGetVersion() {
        version();
        call("cudnnGetVersion");
        return cudnnVersion;
    }

    @Override
    public String cudnnGetErrorString(int status) {
        return switch (status) {
            case 3 -> "CUDNN_STATUS_BAD_PARAM";
            case 3000 -> "CUDNN_STATUS_NOT_SUPPORTED";
            default -> "CUDNN_STATUS_" + status;
        };
    }

    @Override
    public int cudnnCreate(MemorySegment handle) {
        return create("cudnnCreate", handle);
    }

    @Override
    public int cudnnDestroy(MemorySegment handle) {
        return destroy("cudnnDestroy", handle);
    }

    @Override
    public int cudnnSetStream(MemorySegment handle, MemorySegment stream) {
        noteScopes("cudnnSetStream", handle, stream);
        return call("cudnnSetStream", handle.address(), stream.address());
    }

    @Override
    public int cudnnCreateTensorDescriptor(MemorySegment tensorDesc) {
        return create("cudnnCreateTensorDescriptor", tensorDesc);
    }

    @Override
    public int cudnnSetTensor4dDescriptor(MemorySegment tensorDesc, int format, int dataType, int n, int c, int h,
            int w) {
        return call("cudnnSetTensor4dDescriptor", format, dataType, n, c, h, w);
    }

    @Override
    public int cudnnDestroyTensorDescriptor(MemorySegment tensorDesc) {
        return destroy("cudnnDestroyTensorDescriptor", tensorDesc);
    }

    @Override
    public int cudnnSoftmaxForward(MemorySegment handle, int algo, int mode, MemorySegment alpha, MemorySegment xDesc,
            MemorySegment x, MemorySegment beta, MemorySegment yDesc, MemorySegment y) {
        noteScopes("cudnnSoftmaxForward", handle, alpha, xDesc, x, beta, yDesc, y);
        return runs(call("cudnnSoftmaxForward", algo, mode, x.address(), y.address()), y,
                MemorySegment.ofAddress((Long) last("cudnnSetStream")[1]));
    }

    @Override
    public String cudnnGetLastErrorString() {
        return lastError;
    }

    @Override
    public int cudnnBackendCreateDescriptor(int descriptorType, MemorySegment descriptor) {
        int status = create("cudnnBackendCreateDescriptor", descriptor, descriptorType);
        if (status == 0) {
            synchronized (this) {
                descriptorTypes.put(descriptor.reinterpret(8).get(ValueLayout.JAVA_LONG, 0), descriptorType);
            }
        }
        return status;
    }

    @Override
    public int cudnnBackendDestroyDescriptor(MemorySegment descriptor) {
        return destroy("cudnnBackendDestroyDescriptor", descriptor);
    }

    @Override
    public int cudnnBackendSetAttribute(MemorySegment descriptor, int attributeName, int attributeType,
            long elementCount, MemorySegment arrayOfElements) {
        int status = call("cudnnBackendSetAttribute", descriptor.address(), attributeName, attributeType, elementCount);
        MemorySegment values = arrayOfElements.reinterpret(elementCount * 8);
        long[] read = new long[(int) elementCount];
        for (int i = 0; i < read.length; i++) {
            // The 8-byte types whole (a double as its bits), a boolean as its byte, the enums and floats as their 4 bytes.
            if (attributeType == Cudnn.CUDNN_TYPE_INT64() || attributeType == Cudnn.CUDNN_TYPE_VOID_PTR()
                    || attributeType == Cudnn.CUDNN_TYPE_DOUBLE()
                    || attributeType == Cudnn.CUDNN_TYPE_BACKEND_DESCRIPTOR() || attributeType == Cudnn.CUDNN_TYPE_HANDLE()) {
                read[i] = values.getAtIndex(ValueLayout.JAVA_LONG, i);
            } else if (attributeType == Cudnn.CUDNN_TYPE_BOOLEAN()) {
                read[i] = values.get(ValueLayout.JAVA_BYTE, i);
            } else {
                read[i] = values.getAtIndex(ValueLayout.JAVA_INT, i);
            }
        }
        synchronized (this) {
            if (!live.contains(descriptor.address())) {
                throw new AssertionError("cudnnBackendSetAttribute of a descriptor that is not live");
            }
            attributes.computeIfAbsent(descriptor.address(), d -> new HashMap<>()).put(attributeName, read);
            Map<Integer, long[]> set = attributes.get(descriptor.address());
            if (descriptorTypes.get(descriptor.address()) == Cudnn.CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR()) {
                long[] ws = set.get(Cudnn.CUDNN_ATTR_VARIANT_PACK_WORKSPACE());
                packs.put(descriptor.address(), new VariantPack(set.getOrDefault(Cudnn.CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS(),
                        new long[0]), set.getOrDefault(Cudnn.CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS(), new long[0]),
                        ws == null ? 0 : ws[0]));
            }
        }
        return status;
    }

    @Override
    public int cudnnBackendGetAttribute(MemorySegment descriptor, int attributeName, int attributeType,
            long requestedElementCount, MemorySegment elementCount, MemorySegment arrayOfElements) {
        int status = call("cudnnBackendGetAttribute", descriptor.address(), attributeName, requestedElementCount);
        if (status != 0) {
            return status;
        }
        if (attributeName == Cudnn.CUDNN_ATTR_ENGINEHEUR_RESULTS()) {
            elementCount.set(ValueLayout.JAVA_LONG, 0, requestedElementCount == 0 ? engineConfigs
                    : Math.min(requestedElementCount, engineConfigs));
        } else if (attributeName == Cudnn.CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE()) {
            elementCount.set(ValueLayout.JAVA_LONG, 0, 1);
            arrayOfElements.reinterpret(8).set(ValueLayout.JAVA_LONG, 0, planWorkspaceBytes);
        } else {
            throw new AssertionError("the fake cannot read attribute " + attributeName);
        }
        return 0;
    }

    @Override
    public int cudnnBackendFinalize(MemorySegment descriptor) {
        int status = call("cudnnBackendFinalize", descriptor.address());
        synchronized (this) {
            if (status == 0 && refusingPlans > 0
                    && descriptorTypes.get(descriptor.address()) == Cudnn.CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR()) {
                refusingPlans--;
                return Cudnn.CUDNN_STATUS_NOT_SUPPORTED();
            }
        }
        return status;
    }

    @Override
    public int cudnnBackendExecute(MemorySegment handle, MemorySegment executionPlan, MemorySegment variantPack) {
        noteScopes("cudnnBackendExecute", handle, executionPlan, variantPack);
        int status = call("cudnnBackendExecute", executionPlan.address(), variantPack.address());
        VariantPack pack;
        synchronized (this) {
            if (!live.contains(executionPlan.address()) || !live.contains(variantPack.address())) {
                throw new AssertionError("cudnnBackendExecute of a plan or variant pack that is not live");
            }
            pack = packs.get(variantPack.address());
        }
        return runs(status, MemorySegment.ofAddress(pack.pointer(AttentionGraph.UID_O)),
                MemorySegment.ofAddress((Long) last("cudnnSetStream")[1]));
    }

    /** Every function of the seam that a test can make fail, in the order the table lists them. */
    static final List<String> FUNCTIONS = List.of("cublasLtCreate", "cublasCreate_v2", "cublasLtMatmulDescCreate",
            "cublasLtMatmulDescSetAttribute", "cublasLtMatrixLayoutCreate", "cublasLtMatrixLayoutSetAttribute",
            "cublasLtMatmulPreferenceCreate", "cublasLtMatmulPreferenceSetAttribute", "cublasLtMatmulAlgoGetHeuristic",
            "cublasLtMatmul", "cublasSetStream_v2", "cublasSetWorkspace_v2", "cublasGemmEx", "cublasGemmStridedBatchedEx",
            "cudnnCreate", "cudnnCreateTensorDescriptor", "cudnnSetTensor4dDescriptor", "cudnnSetStream",
            "cudnnSoftmaxForward", "cudnnBackendCreateDescriptor", "cudnnBackendSetAttribute",
            "cudnnBackendGetAttribute", "cudnnBackendFinalize", "cudnnBackendExecute");
}
