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
 * scaled-dot-product attention forward, lowered as cudnn-frontend 1.15 (the frontend cuDNN 9.14's
 * release names) lowers its SDPA node, and the execution plan of the first engine configuration
 * (in the heuristic's order) that takes it. The frontend lowers an attention to one of two graphs
 * ({@link Form}); this class tries them in the frontend's order and keeps the first whose plan
 * builds ({@link #form()} says which):
 * <ul>
 *   <li>{@link Form#UNIFIED}, the frontend's choice on cuDNN 9.13.1 and newer for an attention
 *       without a mask: one {@code SDPA_FWD} operation naming Q, K (BHSD, not transposed), V, O
 *       and the scale (a by-value fp32 tensor of one dimension, as the frontend makes it);
 *   <li>{@link Form#COMPOSITE}, its choice for a causal attention (and the graph cuDNN's fused
 *       engines have matched since 8.9), each tensor virtual unless named by a uid below:
 * </ul>
 * <pre>
 *   S = Q K^T                       matmul, fp32 compute, padding value 0.0; K^T is K (BHSD)
 *                                   described as b h d s_kv
 *   S = S * scale                   pointwise MUL by a by-value fp32 scalar (uid 5)
 *   S = row &gt;= col ? S : -inf       causal only: GEN_INDEX on axes 2 and 3 (fp32 math, int32
 *                                   out), CMP_GE (boolean), BINARY_SELECT with a by-value -inf (uid 6)
 *   M = max_j S; E = exp(S - M)     reduction MAX (not deterministic) to b h s_q 1, SUB, EXP
 *   Z = sum_j E; L = M + log Z      reduction ADD; LOG, ADD: the softmax statistics, virtual
 *                                   (unread), which the frontend emits for inference too
 *   P = E / Z                       DIV; P of the inputs' type (the frontend sets bmm2's A type)
 *   O = P V                         matmul, fp32 compute, padding value 0.0
 * </pre>
 * Intermediates are fp32 and pointwise math fp32 (CMP_GE's boolean), as the frontend's context;
 * every tensor states 16-byte alignment, which the views' check guarantees; the virtual flag is
 * set only on virtual tensors. The probe {@code probes/cudnn_sdpa.c} builds the same graphs in
 * the same order.
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
    /** The first cuDNN with the {@code SDPA_FWD} operation (the frontend's check). */
    static final long UNIFIED_SINCE = 91301;
    /** The first cuDNN that takes a reduction's deterministic flag (the frontend sets it from there). */
    private static final long DETERMINISTIC_FLAG_SINCE = 91100;

    /** The graphs cudnn-frontend lowers an attention to, in the order tried. */
    enum Form {
        /** One {@code CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR}. */
        UNIFIED("one SDPA_FWD operation"),
        /** The matmul, pointwise and reduction chain with the softmax statistics, virtual. */
        COMPOSITE("the composite graph");

        private final String description;

        Form(String description) {
            this.description = description;
        }

        @Override
        public String toString() {
            return description;
        }
    }

    private final BlasCalls calls;
    private final long cudnnVersion;
    /** Every descriptor made, in creation order (destroyed in reverse). */
    private final List<MemorySegment> made = new ArrayList<>();
    private long nextUid = FIRST_VIRTUAL_UID;
    private MemorySegment plan;
    private long workspaceBytes;
    private Form form;
    /** Which of the heuristic's engine configurations built the plan, and how many it offered. */
    private long chosenConfig;
    private long offeredConfigs;

    private AttentionGraph(BlasCalls calls, long cudnnVersion) {
        this.calls = calls;
        this.cudnnVersion = cudnnVersion;
    }

    /**
     * {@return the graphs to try for {@code spec} on cuDNN {@code cudnnVersion}, in order}: the
     * frontend's pick first (the single operation when cuDNN has it and there is no mask), then
     * the composite graph, which every cuDNN 9 has.
     */
    static List<Form> forms(AttentionSpec spec, long cudnnVersion) {
        return !spec.causalMask() && cudnnVersion >= UNIFIED_SINCE ? List.of(Form.UNIFIED, Form.COMPOSITE)
                : List.of(Form.COMPOSITE);
    }

    /**
     * Builds the graph of {@code spec} and the plan of the first engine configuration that takes
     * it, trying each {@link #forms form} in turn: a form cuDNN refuses anywhere (a descriptor,
     * the heuristic, every plan) is destroyed and the next tried. Under the cuDNN handle's lock,
     * with the handle's context current. On failure every descriptor made is destroyed before the
     * exception leaves.
     *
     * @throws BlasException when cuDNN refuses every form: the last form's refusal, with the
     *     earlier ones suppressed in it
     */
    static AttentionGraph build(BlasCalls calls, MemorySegment handle, AttentionSpec spec) {
        AttentionGraph g = new AttentionGraph(calls, calls.cudnnVersion());
        List<BlasException> refusals = new ArrayList<>();
        for (Form f : forms(spec, g.cudnnVersion)) {
            try (Arena arena = Arena.ofConfined()) {
                g.plan(arena, handle, spec, f, f == Form.UNIFIED ? g.unified(arena, spec) : g.composite(arena, spec));
                g.form = f;
                return g;
            } catch (BlasException e) {
                // This form is refused: nothing of it is kept, and the next form may be taken.
                g.destroy();
                LOG.debug("attention {}: cuDNN refuses {}: {}", spec, f, e.getMessage());
                refusals.add(e);
            } catch (RuntimeException e) {
                g.destroy();
                throw e;
            }
        }
        BlasException last = refusals.removeLast();
        refusals.forEach(last::addSuppressed);
        throw last;
    }

    /** {@return the form whose plan was built} */
    Form form() {
        return form;
    }

    /** {@return the form, the engine configuration and the workspace, for a toString} */
    String describe() {
        return form + ", engine configuration " + chosenConfig + " of " + offeredConfigs + ", workspace "
                + workspaceBytes + " bytes";
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
        calls.backendSet(t, Cudnn.CUDNN_ATTR_TENSOR_DIMENSIONS(), Cudnn.CUDNN_TYPE_INT64(), dims.length,
                longs(arena, dims), what);
        calls.backendSet(t, Cudnn.CUDNN_ATTR_TENSOR_STRIDES(), Cudnn.CUDNN_TYPE_INT64(), strides.length,
                longs(arena, strides), what);
        calls.backendSet(t, Cudnn.CUDNN_ATTR_TENSOR_UNIQUE_ID(), Cudnn.CUDNN_TYPE_INT64(), 1, longs(arena, uid), what);
        calls.backendSet(t, Cudnn.CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT(), Cudnn.CUDNN_TYPE_INT64(), 1,
                longs(arena, ALIGNMENT), what);
        // The frontend sets either flag only when it is true (false is the default).
        if (isVirtual) {
            calls.backendSet(t, Cudnn.CUDNN_ATTR_TENSOR_IS_VIRTUAL(), Cudnn.CUDNN_TYPE_BOOLEAN(), 1,
                    arena.allocateFrom(ValueLayout.JAVA_BYTE, (byte) 1), what);
        }
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
        if (cudnnVersion >= DETERMINISTIC_FLAG_SINCE) {
            calls.backendSet(r, Cudnn.CUDNN_ATTR_REDUCTION_IS_DETERMINISTIC(), Cudnn.CUDNN_TYPE_BOOLEAN(), 1,
                    arena.allocateFrom(ValueLayout.JAVA_BYTE, (byte) 0), what);
        }
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
        // The frontend 1.15 always sets the padding value (0.0 without a padding mask).
        calls.backendSet(m, Cudnn.CUDNN_ATTR_MATMUL_PADDING_VALUE(), Cudnn.CUDNN_TYPE_DOUBLE(), 1,
                arena.allocateFrom(ValueLayout.JAVA_DOUBLE, 0.0), what);
        calls.backendFinalize(m, "matmul " + what);
        MemorySegment op = create(Cudnn.CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR(), "operation " + what);
        setDescriptor(arena, op, Cudnn.CUDNN_ATTR_OPERATION_MATMUL_ADESC(), a, what);
        setDescriptor(arena, op, Cudnn.CUDNN_ATTR_OPERATION_MATMUL_BDESC(), b, what);
        setDescriptor(arena, op, Cudnn.CUDNN_ATTR_OPERATION_MATMUL_CDESC(), c, what);
        setDescriptor(arena, op, Cudnn.CUDNN_ATTR_OPERATION_MATMUL_DESC(), m, what);
        calls.backendFinalize(op, "operation " + what);
        return op;
    }

    /** The single SDPA_FWD operation of {@link Form#UNIFIED}. */
    private List<MemorySegment> unified(Arena arena, AttentionSpec s) {
        int io = s.type().cudnnDataType();
        long[] qDims = {s.batch(), s.heads(), s.seqQ(), s.headDim()};
        long[] qStrides = {s.heads() * s.seqQ() * s.headDim(), s.seqQ() * s.headDim(), s.headDim(), 1};
        long[] kvDims = {s.batch(), s.heads(), s.seqKv(), s.headDim()};
        long[] kvStrides = {s.heads() * s.seqKv() * s.headDim(), s.seqKv() * s.headDim(), s.headDim(), 1};
        MemorySegment q = tensor(arena, "Q", UID_Q, io, qDims, qStrides, false, false);
        MemorySegment k = tensor(arena, "K", UID_K, io, kvDims, kvStrides, false, false);
        MemorySegment v = tensor(arena, "V", UID_V, io, kvDims, kvStrides, false, false);
        MemorySegment o = tensor(arena, "O", UID_O, io, qDims, qStrides, false, false);
        // One dimension: the frontend makes the scale after the SDPA node's tensors are filled in,
        // so nothing widens it to the graph's four, as a pointwise operation's inputs are.
        MemorySegment scale = tensor(arena, "scale", UID_SCALE, Cudnn.CUDNN_DATA_FLOAT(), new long[] {1},
                new long[] {1}, false, true);
        MemorySegment op = create(Cudnn.CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR(), "operation SDPA forward");
        setDescriptor(arena, op, Cudnn.CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC(), q, "SDPA forward");
        setDescriptor(arena, op, Cudnn.CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC(), k, "SDPA forward");
        setDescriptor(arena, op, Cudnn.CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC(), v, "SDPA forward");
        setDescriptor(arena, op, Cudnn.CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC(), o, "SDPA forward");
        setDescriptor(arena, op, Cudnn.CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC(), scale, "SDPA forward");
        calls.backendFinalize(op, "operation SDPA forward");
        return List.of(op);
    }

    /** The operations of {@link Form#COMPOSITE}, in order (see the class comment). */
    private List<MemorySegment> composite(Arena arena, AttentionSpec s) {
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
        // The softmax statistics max + log(sum), virtual: nothing reads them, but cudnn-frontend's
        // softmax emits them for inference too (every release from 1.5 to 1.23), and without them
        // cuDNN 9.14 matched no engine to the graph (the probe's first H100 run).
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
    private void plan(Arena arena, MemorySegment handle, AttentionSpec spec, Form f, List<MemorySegment> ops) {
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
                    "the heuristic offers no engine for " + f + " of " + spec + ": " + ADVICE);
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
                chosenConfig = i;
                offeredConfigs = offered;
                LOG.debug("attention {}: {}, engine configuration {} of {}, workspace {} bytes", spec, f, i, offered,
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
                + " engine configurations the heuristic offers builds " + f + " of " + spec + ": " + ADVICE);
    }

    /** What a caller can change when no engine takes the graph. */
    private static final String ADVICE = "cuDNN 9.14's fused attention runs F16 or BF16 inputs with a head dimension "
            + "that is a multiple of 8, up to 128 on Ampere and Blackwell and 256 on Hopper; change the head dimension, "
            + "the sequence lengths or the type, or run it on a GPU of compute capability 8.0 or newer";
}
