package dev.gatun.cuda.blas;

import dev.gatun.cuda.blas.internal.api.BlasCalls;
import dev.gatun.cuda.blas.internal.bindings.cudnn.Cudnn;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The cuDNN backend descriptors of one {@link Attention}: the operation graph of a
 * scaled-dot-product attention forward, as cudnn-frontend's SDPA node lowers it for cuDNN 9.14,
 * and the execution plan of the first engine configuration (in the heuristic's order) that takes
 * it. The graph, each tensor virtual unless named by a uid below:
 * <pre>
 *   S = Q K^T                       matmul, fp32 compute; K^T is K (BHSD) described as b h d s_kv
 *   S = S * scale                   pointwise MUL by a by-value fp32 scalar (uid 5)
 *   S = row &gt;= col ? S : -inf       causal only: GEN_INDEX on axes 2 and 3 (int32), CMP_GE
 *                                   (boolean), BINARY_SELECT with a by-value -inf (uid 6)
 *   M = max_j S; E = exp(S - M)     reduction MAX to b h s_q 1, SUB, EXP
 *   Z = sum_j E; L = M + log Z      reduction ADD; LOG, ADD (the statistics, virtual: unread)
 *   P = E / Z                       DIV; P of the inputs' type (the engines' rule)
 *   O = P V                         matmul, fp32 compute
 * </pre>
 * Intermediates are fp32, as the frontend's; every tensor is 16-byte aligned, which the views'
 * check guarantees. The probe {@code probes/cudnn_sdpa.c} builds the same graph in C.
 *
 * <p>Not thread-safe: built under the cuDNN handle's lock (the operation graph and the plan name
 * the handle), destroyed by its attention's close. Every descriptor is kept until then: the
 * plan's engine configuration and the graph it was built from are cuDNN objects the plan may
 * refer to, and keeping them costs only host memory.
 */
final class AttentionGraph {

    private static final Logger LOG = LoggerFactory.getLogger(AttentionGraph.class);

    static final long UID_Q = 1;
    static final long UID_K = 2;
    static final long UID_V = 3;
    static final long UID_O = 4;
    static final long UID_SCALE = 5;
    static final long UID_NEG_INF = 6;
    /** Virtual tensors are numbered from here. */
    private static final long FIRST_VIRTUAL_UID = 100;
    private static final long ALIGNMENT = 16;

    private final BlasCalls calls;
    /** Every descriptor made, in creation order (destroyed in reverse). */
    private final List<MemorySegment> made = new ArrayList<>();
    private long nextUid = FIRST_VIRTUAL_UID;
    private MemorySegment plan;
    private long workspaceBytes;

    private AttentionGraph(BlasCalls calls) {
        this.calls = calls;
    }

    /**
     * Builds the graph of {@code spec} and the plan of the first engine configuration that takes
     * it. Under the cuDNN handle's lock, with the handle's context current. On failure every
     * descriptor made is destroyed before the exception leaves.
     *
     * @throws BlasException when cuDNN refuses a descriptor, or no engine runs the graph
     */
    static AttentionGraph build(BlasCalls calls, MemorySegment handle, AttentionSpec spec) {
        AttentionGraph g = new AttentionGraph(calls);
        try (Arena arena = Arena.ofConfined()) {
            g.plan(arena, handle, spec, g.operations(arena, spec));
            return g;
        } catch (RuntimeException e) {
            g.destroy();
            throw e;
        }
    }

    /** {@return the execution plan} */
    MemorySegment plan() {
        return plan;
    }

    /** {@return the device workspace the plan needs} */
    long workspaceBytes() {
        return workspaceBytes;
    }

    /** Destroys every descriptor, newest first. A failed destroy is logged; the descriptor is abandoned. */
    void destroy() {
        for (int i = made.size() - 1; i >= 0; i--) {
            int status = calls.backendDestroy(made.get(i));
            if (status != 0) {
                LOG.warn("cudnnBackendDestroyDescriptor failed with status {}; the descriptor is abandoned", status);
            }
        }
        made.clear();
        plan = null;
    }

    private MemorySegment create(int type, String what) {
        MemorySegment d = calls.backendCreate(type, what);
        made.add(d);
        return d;
    }

    private static MemorySegment longs(Arena arena, long... values) {
        return arena.allocateFrom(ValueLayout.JAVA_LONG, values);
    }

    private static MemorySegment ints(Arena arena, int value) {
        return arena.allocateFrom(ValueLayout.JAVA_INT, value);
    }

    /** The descriptors {@code ds} as an array of pointers, for a BACKEND_DESCRIPTOR attribute. */
    private static MemorySegment pointers(Arena arena, List<MemorySegment> ds) {
        MemorySegment array = arena.allocate(ValueLayout.ADDRESS, ds.size());
        for (int i = 0; i < ds.size(); i++) {
            array.setAtIndex(ValueLayout.ADDRESS, i, ds.get(i));
        }
        return array;
    }

    private void setDescriptor(Arena arena, MemorySegment d, int name, MemorySegment value, String what) {
        calls.backendSet(d, name, Cudnn.CUDNN_TYPE_BACKEND_DESCRIPTOR(), 1, pointers(arena, List.of(value)), what);
    }

    private MemorySegment tensor(Arena arena, String what, long uid, int type, long[] dims, long[] strides,
            boolean isVirtual, boolean byValue) {
        MemorySegment t = create(Cudnn.CUDNN_BACKEND_TENSOR_DESCRIPTOR(), "tensor " + what);
        calls.backendSet(t, Cudnn.CUDNN_ATTR_TENSOR_DATA_TYPE(), Cudnn.CUDNN_TYPE_DATA_TYPE(), 1, ints(arena, type), what);
        calls.backendSet(t, Cudnn.CUDNN_ATTR_TENSOR_DIMENSIONS(), Cudnn.CUDNN_TYPE_INT64(), 4, longs(arena, dims), what);
        calls.backendSet(t, Cudnn.CUDNN_ATTR_TENSOR_STRIDES(), Cudnn.CUDNN_TYPE_INT64(), 4, longs(arena, strides), what);
        calls.backendSet(t, Cudnn.CUDNN_ATTR_TENSOR_UNIQUE_ID(), Cudnn.CUDNN_TYPE_INT64(), 1, longs(arena, uid), what);
        calls.backendSet(t, Cudnn.CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT(), Cudnn.CUDNN_TYPE_INT64(), 1,
                longs(arena, ALIGNMENT), what);
        calls.backendSet(t, Cudnn.CUDNN_ATTR_TENSOR_IS_VIRTUAL(), Cudnn.CUDNN_TYPE_BOOLEAN(), 1,
                arena.allocateFrom(ValueLayout.JAVA_BYTE, (byte) (isVirtual ? 1 : 0)), what);
        if (byValue) {
            calls.backendSet(t, Cudnn.CUDNN_ATTR_TENSOR_IS_BY_VALUE(), Cudnn.CUDNN_TYPE_BOOLEAN(), 1,
                    arena.allocateFrom(ValueLayout.JAVA_BYTE, (byte) 1), what);
        }
        calls.backendFinalize(t, "tensor " + what);
        return t;
    }

    private MemorySegment virtual(Arena arena, String what, int type, long[] dims, long[] strides) {
        return tensor(arena, what, nextUid++, type, dims, strides, true, false);
    }

    /** y = mode(x[, b][, t]); {@code axis} (GEN_INDEX's) is -1 for none; null b or t for none. */
    private MemorySegment pointwise(Arena arena, String what, int mode, int math, long axis, MemorySegment x,
            MemorySegment b, MemorySegment t, MemorySegment y) {
        MemorySegment pw = create(Cudnn.CUDNN_BACKEND_POINTWISE_DESCRIPTOR(), "pointwise " + what);
        calls.backendSet(pw, Cudnn.CUDNN_ATTR_POINTWISE_MODE(), Cudnn.CUDNN_TYPE_POINTWISE_MODE(), 1, ints(arena, mode),
                what);
        calls.backendSet(pw, Cudnn.CUDNN_ATTR_POINTWISE_MATH_PREC(), Cudnn.CUDNN_TYPE_DATA_TYPE(), 1, ints(arena, math),
                what);
        if (axis >= 0) {
            calls.backendSet(pw, Cudnn.CUDNN_ATTR_POINTWISE_AXIS(), Cudnn.CUDNN_TYPE_INT64(), 1, longs(arena, axis), what);
        }
        calls.backendFinalize(pw, "pointwise " + what);
        MemorySegment op = create(Cudnn.CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR(), "operation " + what);
        setDescriptor(arena, op, Cudnn.CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR(), pw, what);
        setDescriptor(arena, op, Cudnn.CUDNN_ATTR_OPERATION_POINTWISE_XDESC(), x, what);
        if (b != null) {
            setDescriptor(arena, op, Cudnn.CUDNN_ATTR_OPERATION_POINTWISE_BDESC(), b, what);
        }
        if (t != null) {
            setDescriptor(arena, op, Cudnn.CUDNN_ATTR_OPERATION_POINTWISE_TDESC(), t, what);
        }
        setDescriptor(arena, op, Cudnn.CUDNN_ATTR_OPERATION_POINTWISE_YDESC(), y, what);
        MemorySegment one = arena.allocateFrom(ValueLayout.JAVA_FLOAT, 1f);
        calls.backendSet(op, Cudnn.CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1(), Cudnn.CUDNN_TYPE_FLOAT(), 1, one, what);
        calls.backendSet(op, Cudnn.CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2(), Cudnn.CUDNN_TYPE_FLOAT(), 1, one, what);
        calls.backendFinalize(op, "operation " + what);
        return op;
    }

    private MemorySegment reduction(Arena arena, String what, int operator, MemorySegment x, MemorySegment y) {
        MemorySegment r = create(Cudnn.CUDNN_BACKEND_REDUCTION_DESCRIPTOR(), "reduction " + what);
        calls.backendSet(r, Cudnn.CUDNN_ATTR_REDUCTION_OPERATOR(), Cudnn.CUDNN_TYPE_REDUCTION_OPERATOR_TYPE(), 1,
                ints(arena, operator), what);
        calls.backendSet(r, Cudnn.CUDNN_ATTR_REDUCTION_COMP_TYPE(), Cudnn.CUDNN_TYPE_DATA_TYPE(), 1,
                ints(arena, Cudnn.CUDNN_DATA_FLOAT()), what);
        calls.backendFinalize(r, "reduction " + what);
        MemorySegment op = create(Cudnn.CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR(), "operation " + what);
        setDescriptor(arena, op, Cudnn.CUDNN_ATTR_OPERATION_REDUCTION_XDESC(), x, what);
        setDescriptor(arena, op, Cudnn.CUDNN_ATTR_OPERATION_REDUCTION_YDESC(), y, what);
        setDescriptor(arena, op, Cudnn.CUDNN_ATTR_OPERATION_REDUCTION_DESC(), r, what);
        calls.backendFinalize(op, "operation " + what);
        return op;
    }

    private MemorySegment matmul(Arena arena, String what, MemorySegment a, MemorySegment b, MemorySegment c) {
        MemorySegment m = create(Cudnn.CUDNN_BACKEND_MATMUL_DESCRIPTOR(), "matmul " + what);
        calls.backendSet(m, Cudnn.CUDNN_ATTR_MATMUL_COMP_TYPE(), Cudnn.CUDNN_TYPE_DATA_TYPE(), 1,
                ints(arena, Cudnn.CUDNN_DATA_FLOAT()), what);
        calls.backendFinalize(m, "matmul " + what);
        MemorySegment op = create(Cudnn.CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR(), "operation " + what);
        setDescriptor(arena, op, Cudnn.CUDNN_ATTR_OPERATION_MATMUL_ADESC(), a, what);
        setDescriptor(arena, op, Cudnn.CUDNN_ATTR_OPERATION_MATMUL_BDESC(), b, what);
        setDescriptor(arena, op, Cudnn.CUDNN_ATTR_OPERATION_MATMUL_CDESC(), c, what);
        setDescriptor(arena, op, Cudnn.CUDNN_ATTR_OPERATION_MATMUL_DESC(), m, what);
        calls.backendFinalize(op, "operation " + what);
        return op;
    }

    /** The graph's operations, in order (see the class comment). */
    private List<MemorySegment> operations(Arena arena, AttentionSpec s) {
        int io = s.type().cudnnDataType();
        int f32 = Cudnn.CUDNN_DATA_FLOAT();
        long b = s.batch();
        long h = s.heads();
        long sq = s.seqQ();
        long skv = s.seqKv();
        long d = s.headDim();
        long[] qDims = {b, h, sq, d};
        long[] qStrides = {h * sq * d, sq * d, d, 1};
        long[] sDims = {b, h, sq, skv};
        long[] sStrides = {h * sq * skv, sq * skv, skv, 1};
        long[] rowDims = {b, h, sq, 1};
        long[] rowStrides = {h * sq, sq, 1, 1};
        long[] one = {1, 1, 1, 1};
        MemorySegment q = tensor(arena, "Q", UID_Q, io, qDims, qStrides, false, false);
        // K is stored b h s_kv d; the graph's first matmul takes K^T, the same memory read with d the unit stride.
        MemorySegment kT = tensor(arena, "K^T", UID_K, io, new long[] {b, h, d, skv},
                new long[] {h * skv * d, skv * d, 1, d}, false, false);
        MemorySegment v = tensor(arena, "V", UID_V, io, new long[] {b, h, skv, d}, new long[] {h * skv * d, skv * d, d, 1},
                false, false);
        MemorySegment o = tensor(arena, "O", UID_O, io, qDims, qStrides, false, false);
        MemorySegment scale = tensor(arena, "scale", UID_SCALE, f32, one, one, false, true);
        List<MemorySegment> ops = new ArrayList<>();
        MemorySegment scores = virtual(arena, "Q K^T", f32, sDims, sStrides);
        ops.add(matmul(arena, "Q K^T", q, kT, scores));
        MemorySegment scaled = virtual(arena, "scaled", f32, sDims, sStrides);
        ops.add(pointwise(arena, "scale", Cudnn.CUDNN_POINTWISE_MUL(), f32, -1, scores, scale, null, scaled));
        if (s.causalMask()) {
            MemorySegment row = virtual(arena, "row", Cudnn.CUDNN_DATA_INT32(), sDims, sStrides);
            ops.add(pointwise(arena, "row index", Cudnn.CUDNN_POINTWISE_GEN_INDEX(), f32, 2, scaled, null, null, row));
            MemorySegment col = virtual(arena, "column", Cudnn.CUDNN_DATA_INT32(), sDims, sStrides);
            ops.add(pointwise(arena, "column index", Cudnn.CUDNN_POINTWISE_GEN_INDEX(), f32, 3, scaled, null, null,
                    col));
            MemorySegment keep = virtual(arena, "row >= column", Cudnn.CUDNN_DATA_BOOLEAN(), sDims, sStrides);
            ops.add(pointwise(arena, "row >= column", Cudnn.CUDNN_POINTWISE_CMP_GE(), Cudnn.CUDNN_DATA_BOOLEAN(), -1, row,
                    col, null, keep));
            MemorySegment negInf = tensor(arena, "-inf", UID_NEG_INF, f32, one, one, false, true);
            MemorySegment masked = virtual(arena, "masked", f32, sDims, sStrides);
            ops.add(pointwise(arena, "causal mask", Cudnn.CUDNN_POINTWISE_BINARY_SELECT(), f32, -1, scaled, negInf, keep,
                    masked));
            scaled = masked;
        }
        MemorySegment max = virtual(arena, "row max", f32, rowDims, rowStrides);
        ops.add(reduction(arena, "row max", Cudnn.CUDNN_REDUCE_TENSOR_MAX(), scaled, max));
        MemorySegment centered = virtual(arena, "S - max", f32, sDims, sStrides);
        ops.add(pointwise(arena, "S - max", Cudnn.CUDNN_POINTWISE_SUB(), f32, -1, scaled, max, null, centered));
        MemorySegment exp = virtual(arena, "exp", f32, sDims, sStrides);
        ops.add(pointwise(arena, "exp", Cudnn.CUDNN_POINTWISE_EXP(), f32, -1, centered, null, null, exp));
        MemorySegment sum = virtual(arena, "row sum", f32, rowDims, rowStrides);
        ops.add(reduction(arena, "row sum", Cudnn.CUDNN_REDUCE_TENSOR_ADD(), exp, sum));
        // The softmax statistics max + log(sum), virtual: nothing reads them, but the fused
        // engines recognize the attention by this pattern, which cudnn-frontend's softmax always
        // emits (the probe: without them no engine configuration builds).
        MemorySegment logSum = virtual(arena, "log sum", f32, rowDims, rowStrides);
        ops.add(pointwise(arena, "log sum", Cudnn.CUDNN_POINTWISE_LOG(), f32, -1, sum, null, null, logSum));
        MemorySegment stats = virtual(arena, "statistics", f32, rowDims, rowStrides);
        ops.add(pointwise(arena, "statistics", Cudnn.CUDNN_POINTWISE_ADD(), f32, -1, max, logSum, null, stats));
        MemorySegment p = virtual(arena, "P", io, sDims, sStrides);
        ops.add(pointwise(arena, "P", Cudnn.CUDNN_POINTWISE_DIV(), f32, -1, exp, sum, null, p));
        ops.add(matmul(arena, "P V", p, v, o));
        return ops;
    }

    /** The operation graph, the heuristic's configurations, and the plan of the first that cuDNN builds. */
    private void plan(Arena arena, MemorySegment handle, AttentionSpec spec, List<MemorySegment> ops) {
        MemorySegment handleValue = pointers(arena, List.of(handle));
        MemorySegment graph = create(Cudnn.CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR(), "operation graph");
        calls.backendSet(graph, Cudnn.CUDNN_ATTR_OPERATIONGRAPH_OPS(), Cudnn.CUDNN_TYPE_BACKEND_DESCRIPTOR(), ops.size(),
                pointers(arena, ops), "operation graph");
        calls.backendSet(graph, Cudnn.CUDNN_ATTR_OPERATIONGRAPH_HANDLE(), Cudnn.CUDNN_TYPE_HANDLE(), 1, handleValue,
                "operation graph");
        calls.backendFinalize(graph, "operation graph");
        MemorySegment heuristic = create(Cudnn.CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR(), "engine heuristic");
        setDescriptor(arena, heuristic, Cudnn.CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH(), graph, "engine heuristic");
        calls.backendSet(heuristic, Cudnn.CUDNN_ATTR_ENGINEHEUR_MODE(), Cudnn.CUDNN_TYPE_HEUR_MODE(), 1,
                ints(arena, Cudnn.CUDNN_HEUR_MODE_A()), "engine heuristic");
        calls.backendFinalize(heuristic, "engine heuristic");
        long offered = calls.backendGet(heuristic, Cudnn.CUDNN_ATTR_ENGINEHEUR_RESULTS(),
                Cudnn.CUDNN_TYPE_BACKEND_DESCRIPTOR(), 0, null, "engine heuristic results");
        if (offered < 1) {
            throw calls.cudnnFailure(Cudnn.CUDNN_STATUS_NOT_SUPPORTED(),
                    "cudnnBackendGetAttribute(engine heuristic results)", calls.cudnnLastError(),
                    "the heuristic offers no engine for " + spec + ": " + ADVICE);
        }
        List<MemorySegment> configs = new ArrayList<>();
        for (long i = 0; i < offered; i++) {
            configs.add(create(Cudnn.CUDNN_BACKEND_ENGINECFG_DESCRIPTOR(), "engine configuration"));
        }
        long returned = calls.backendGet(heuristic, Cudnn.CUDNN_ATTR_ENGINEHEUR_RESULTS(),
                Cudnn.CUDNN_TYPE_BACKEND_DESCRIPTOR(), offered, pointers(arena, configs), "engine heuristic results");
        int last = Cudnn.CUDNN_STATUS_NOT_SUPPORTED();
        String lastDetail = "";
        for (int i = 0; i < Math.min(returned, offered); i++) {
            MemorySegment candidate = create(Cudnn.CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR(), "execution plan");
            calls.backendSet(candidate, Cudnn.CUDNN_ATTR_EXECUTION_PLAN_HANDLE(), Cudnn.CUDNN_TYPE_HANDLE(), 1,
                    handleValue, "execution plan");
            setDescriptor(arena, candidate, Cudnn.CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG(), configs.get(i),
                    "execution plan");
            int status = calls.backendTryFinalize(candidate);
            if (status == 0) {
                MemorySegment bytes = arena.allocate(ValueLayout.JAVA_LONG);
                calls.backendGet(candidate, Cudnn.CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE(), Cudnn.CUDNN_TYPE_INT64(), 1,
                        bytes, "execution plan workspace size");
                plan = candidate;
                workspaceBytes = bytes.get(ValueLayout.JAVA_LONG, 0);
                LOG.debug("attention {}: engine configuration {} of {}, workspace {} bytes", spec, i, offered,
                        workspaceBytes);
                return;
            }
            // This configuration refuses the graph: the next may take it. Its detail is kept for the error.
            last = status;
            lastDetail = calls.cudnnLastError();
            made.remove(candidate);
            calls.backendDestroy(candidate);
        }
        throw calls.cudnnFailure(last, "cudnnBackendFinalize(execution plan)", lastDetail, "none of the " + returned
                + " engine configurations the heuristic offers builds " + spec + ": " + ADVICE);
    }

    /** What a caller can change when no engine takes the graph. */
    private static final String ADVICE = "cuDNN 9.14's fused attention runs F16 or BF16 inputs with a head dimension "
            + "that is a multiple of 8, up to 128 on Ampere and Blackwell and 256 on Hopper; change the head dimension, "
            + "the sequence lengths or the type, or run it on a GPU of compute capability 8.0 or newer";
}
