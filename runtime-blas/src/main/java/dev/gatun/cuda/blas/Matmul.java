package dev.gatun.cuda.blas;

import dev.gatun.cuda.DeviceView;
import dev.gatun.cuda.ForeignWork;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.blas.internal.api.BlasCalls;
import dev.gatun.cuda.blas.internal.bindings.cublaslt.CublasLt;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.ref.Reference;
import java.util.Arrays;

/**
 * A cuBLASLt matmul prepared for one {@link GemmSpec}: descriptors, layouts and the algorithm made
 * once ({@link Blas#matmul}), then {@link #run} any number of times on any streams of the context.
 * D is also C (in place): {@code D = epilogue(alpha op(A) op(B) + beta D)}.
 *
 * <p>A warm run checks its views, reads the stream's workspace (one map read), and submits one
 * {@code cublasLtMatmul} through {@link Stream#submitForeign}: no heuristic query, no allocation
 * on the host or the device, so it can be captured. Runs from several threads are serialized
 * (its operand slots are its own), and a close waits for a run in progress; to run in parallel,
 * prepare one per thread (the algorithm is shared through the context's cache).
 */
public final class Matmul implements AutoCloseable {

    private static final int A = 0;
    private static final int B = 1;
    private static final int D = 2;
    private static final int WORKSPACE = 3;
    private static final int BIAS = 4;

    private final Blas blas;
    private final BlasCalls calls;
    private final GemmSpec spec;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment desc;
    private final MemorySegment aLayout;
    private final MemorySegment bLayout;
    private final MemorySegment dLayout;
    private final Scalars scalars;
    /** The bias pointer attribute's value, set only when the bias's address changes. */
    private final MemorySegment biasPointer;
    private long biasAddress;
    private final MatmulAlgorithm algorithm;
    private final Operands operands;
    private final ForeignWork work = this::submit;
    /** The call's workspace and operand pointers, set by run for the library call. */
    private Blas.Workspace workspace;
    private MemorySegment pointerA;
    private MemorySegment pointerB;
    private MemorySegment pointerD;
    private boolean closed;

    Matmul(Blas blas, GemmSpec spec) {
        this.blas = blas;
        this.calls = blas.calls();
        this.spec = spec;
        BlasType scale = spec.computeType().scaleType();
        MemorySegment made = null;
        MemorySegment a = null;
        MemorySegment b = null;
        MemorySegment d = null;
        try {
            made = calls.matmulDesc(spec.computeType().code(), scale.cudaDataType());
            calls.matmulDescSet(made, CublasLt.CUBLASLT_MATMUL_DESC_TRANSA(), i32(spec.transA().code()));
            calls.matmulDescSet(made, CublasLt.CUBLASLT_MATMUL_DESC_TRANSB(), i32(spec.transB().code()));
            calls.matmulDescSet(made, CublasLt.CUBLASLT_MATMUL_DESC_EPILOGUE(), i32(spec.epilogue().code()));
            a = layout(spec.inputType(), spec.rowsA(), spec.colsA(), spec.effectiveLda(), spec.effectiveStrideA());
            b = layout(spec.inputType(), spec.rowsB(), spec.colsB(), spec.effectiveLdb(), spec.effectiveStrideB());
            d = layout(spec.outputType(), spec.m(), spec.n(), spec.effectiveLdd(), spec.effectiveStrideD());
            this.scalars = Scalars.of(scale, spec.alpha(), spec.beta());
            this.biasPointer = arena.allocate(ValueLayout.ADDRESS);
            this.algorithm = algorithm(made, a, b, d);
        } catch (RuntimeException e) {
            destroy(made, a, b, d);
            arena.close();
            throw e;
        }
        this.desc = made;
        this.aLayout = a;
        this.bLayout = b;
        this.dLayout = d;
        this.operands = new Operands(spec.epilogue().hasBias() ? 5 : 4);
    }

    private MemorySegment i32(int value) {
        return arena.allocateFrom(ValueLayout.JAVA_INT, value);
    }

    private MemorySegment layout(BlasType type, long rows, long cols, long ld, long stride) {
        MemorySegment layout = calls.layout(type.cudaDataType(), rows, cols, ld);
        if (spec.batchCount() > 1) {
            try {
                calls.layoutSet(layout, CublasLt.CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT(), i32(spec.batchCount()));
                calls.layoutSet(layout, CublasLt.CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET(),
                        arena.allocateFrom(ValueLayout.JAVA_LONG, stride));
            } catch (RuntimeException e) {
                calls.layoutDestroy(layout);
                throw e;
            }
        }
        return layout;
    }

    /** The context's algorithm for this spec and workspace size: the heuristic is asked only for a new one. */
    private MatmulAlgorithm algorithm(MemorySegment desc, MemorySegment a, MemorySegment b, MemorySegment d) {
        long workspaceBytes = blas.workspaceBytes();
        Blas.AlgorithmKey key = new Blas.AlgorithmKey(spec, workspaceBytes);
        MatmulAlgorithm cached = blas.algorithms.get(key);
        if (cached != null) {
            return cached;
        }
        MemorySegment preference = calls.preference();
        try {
            calls.preferenceSet(preference, CublasLt.CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES(),
                    arena.allocateFrom(ValueLayout.JAVA_LONG, workspaceBytes));
            // Every operand is checked to start at a multiple of 16 bytes (GemmSpec.checkView):
            // the heuristic may choose an algorithm that relies on it.
            for (int attribute : new int[] {CublasLt.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES(),
                    CublasLt.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES(),
                    CublasLt.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES(),
                    CublasLt.CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES()}) {
                calls.preferenceSet(preference, attribute, i32(16));
            }
            MatmulAlgorithm found = MatmulAlgorithm.allocate();
            blas.heuristicQueries.increment();
            if (!calls.heuristic(blas.ltHandle(), desc, a, b, d, preference, found.result())) {
                // A success with no result: reported as the status cuBLASLt itself gives for no algorithm (15).
            throw new BlasException("cuBLASLt", "cublasLtMatmulAlgoGetHeuristic", 15, "CUBLAS_STATUS_NOT_SUPPORTED "
                        + "(no algorithm for " + spec + " within a workspace of " + workspaceBytes + " bytes)");
            }
            MatmulAlgorithm filled = found.filled();
            MatmulAlgorithm raced = blas.algorithms.putIfAbsent(key, filled);
            return raced != null ? raced : filled;
        } finally {
            calls.preferenceDestroy(preference);
        }
    }

    /** {@return the spec this matmul was prepared for} */
    public GemmSpec spec() {
        return spec;
    }

    /**
     * Queues the matmul on {@code stream} (an epilogue without bias).
     *
     * @param stream a stream of the context
     * @param a A, of the spec's input type, holding at least {@link GemmSpec#bytesA()} bytes
     * @param b B, likewise
     * @param d D (read when beta is not 0, written), of the output type, at least {@link GemmSpec#bytesD()} bytes
     * @throws IllegalArgumentException when a view's type, size or alignment does not fit the spec
     *     (before anything is queued), or the epilogue needs a bias
     * @throws BlasException when cuBLASLt refuses the call
     */
    public void run(Stream stream, DeviceView a, DeviceView b, DeviceView d) {
        if (spec.epilogue().hasBias()) {
            throw new IllegalArgumentException("epilogue " + spec.epilogue() + " adds a bias: pass it to run(stream, a, "
                    + "b, d, bias)");
        }
        submit(stream, a, b, d, null);
    }

    /**
     * Queues the matmul on {@code stream}, with the epilogue's bias.
     *
     * @param stream a stream of the context
     * @param a A
     * @param b B
     * @param d D
     * @param bias m elements of the output type, added to every column of the product
     * @throws IllegalArgumentException as {@link #run(Stream, DeviceView, DeviceView, DeviceView)},
     *     and when the epilogue takes no bias
     */
    public void run(Stream stream, DeviceView a, DeviceView b, DeviceView d, DeviceView bias) {
        if (!spec.epilogue().hasBias()) {
            throw new IllegalArgumentException("epilogue " + spec.epilogue() + " takes no bias");
        }
        GemmSpec.checkView("bias", bias, spec.outputType(), spec.bytesBias());
        submit(stream, a, b, d, bias);
    }

    // Synchronized, as close() is: a run's operand slots are this object's, and its descriptors
    // must not be destroyed while cuBLASLt reads them (a close racing a run on another thread
    // would free them under the call: a crash, not an exception).
    private synchronized void submit(Stream stream, DeviceView a, DeviceView b, DeviceView d, DeviceView bias) {
        checkOpen();
        GemmSpec.checkView("A", a, spec.inputType(), spec.bytesA());
        GemmSpec.checkView("B", b, spec.inputType(), spec.bytesB());
        GemmSpec.checkView("D", d, spec.outputType(), spec.bytesD());
        Blas.Workspace w = blas.workspace(stream);
        if (w.bytes() < algorithm.workspaceBytes()) {
            throw new IllegalStateException("this matmul's algorithm needs " + algorithm.workspaceBytes() + " bytes of "
                    + "workspace, but the stream's is " + w.bytes() + " (Blas.setWorkspaceBytes shrank it): prepare the "
                    + "matmul again");
        }
        pointerA = operands.set(A, a);
        pointerB = operands.set(B, b);
        pointerD = operands.set(D, d);
        operands.views[WORKSPACE] = w.view();
        if (bias != null) {
            long address = operands.set(BIAS, bias).address();
            if (address != biasAddress) {
                biasPointer.set(ValueLayout.JAVA_LONG, 0, address);
                calls.matmulDescSet(desc, CublasLt.CUBLASLT_MATMUL_DESC_BIAS_POINTER(), biasPointer);
                biasAddress = address;
            }
        }
        workspace = w;
        try {
            stream.submitForeign(work, operands.views); // A, B, D, the workspace (and the bias)
        } finally {
            workspace = null;
            operands.clear();
        }
        blas.matmuls.increment();
    }

    /** The library call, under the stream's lock with the context current (Stream.submitForeign). */
    private void submit(MemorySegment stream) {
        Blas.Workspace w = workspace;
        // Safety: every descriptor is live (this open matmul owns them) and describes the views
        // checked above against the spec (types, bytes reached, 16-byte alignment), which are open
        // buffers of this context listed on this stream, as is the workspace, whose size bounds
        // what the algorithm (chosen for at most that size) may use; alpha and beta are host
        // scalars of the descriptor's scale type, read during the call; D is also C (same layout).
        // Scalars and the algorithm are passed as global-scope views of memory this matmul keeps
        // alive (the fence): no session is acquired and released around the call.
        try {
            calls.matmul(blas.ltHandle(), desc, scalars.alpha(), pointerA, aLayout, pointerB, bLayout, scalars.beta(),
                    pointerD, dLayout, algorithm.algo(), w.address(), w.bytes(), stream);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("this matmul is closed (a Blas closes its matmuls as its context closes)");
        }
        blas.checkOpen();
    }

    /**
     * Destroys the descriptors (host objects: work already queued does not need them), after a
     * run in progress on another thread has queued its work. Idempotent. The {@link Blas} closes
     * its open matmuls as it closes with its context, before it destroys the cuBLASLt handle.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        destroy(desc, aLayout, bLayout, dLayout);
        arena.close();
        blas.closed(this);
    }

    private void destroy(MemorySegment made, MemorySegment... layouts) {
        if (made != null) {
            calls.matmulDescDestroy(made);
        }
        Arrays.stream(layouts).filter(l -> l != null).forEach(calls::layoutDestroy);
    }

    @Override
    public String toString() {
        return "Matmul[" + spec + "]";
    }
}
