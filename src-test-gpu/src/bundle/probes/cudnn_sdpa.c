/*
 * cuDNN 9's scaled-dot-product attention forward (inference: no dropout, no stats read) built on
 * the backend (graph) API by hand, lowered as cudnn-frontend 1.15 (the frontend cuDNN 9.14's
 * release names) lowers its SDPA node, the graphs gatun-blas's AttentionGraph builds, tried in the
 * same order (the first whose plan builds is used):
 *
 *   unified (cuDNN >= 9.13.1, no mask; the frontend's pick there): one SDPA_FWD operation naming
 *       Q, K (BHSD, not transposed), V, O and the scale (a by-value fp32 tensor of ONE dimension)
 *   composite (causal, or the unified refused):
 *   S = Q K^T (matmul, fp32 compute, padding value 0.0, S a virtual fp32 tensor)
 *   S = S * scale (pointwise MUL by a by-value fp32 scalar)
 *   [causal] S = row >= col ? S : -inf (GEN_INDEX axis 2 and 3, CMP_GE, BINARY_SELECT)
 *   P = exp(S - max(S)) / sum(exp(S - max(S))) (reduction MAX, SUB, EXP, reduction ADD, DIV;
 *       the reductions flagged not deterministic; P virtual, of the inputs' type)
 *   L = max(S) + log(sum(...)) (LOG, ADD: the softmax statistics, virtual: the frontend emits
 *       them for inference too)
 *   O = P V (matmul, fp32 compute, padding value 0.0)
 *
 * Q, V and O are BHSD contiguous; K is BHSD contiguous in memory and described to the composite
 * graph as K^T (dims b h d s_kv, strides with d the unit one). The virtual flag is set only on
 * virtual tensors. Before the cases, the first shape (no mask) is built in each form, and the
 * composite with its statistics absent, virtual and an output, and each status printed. Each
 * case runs on random inputs with O
 * poisoned first and is checked against a CPU reference (double math); one case is captured into
 * a CUDA graph and replayed 100 times, each replay compared bit for bit with the eager run; two
 * shapes the engines should refuse report the status cuDNN gives. Prints one line:
 *   CUDNN-SDPA c: N/M attentions right ...
 * Exit status: 0 when every case that should run ran right, 1 otherwise, 2 on a CUDA error.
 */
#include <cuda_runtime.h>
#include <cudnn.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CUDA(call)                                                                                 \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            printf("CUDNN-SDPA c: CUDA error %s at %s:%d (%s)\n", cudaGetErrorName(e_), __FILE__,  \
                   __LINE__, #call);                                                               \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

/* The first failed cuDNN call of a build: its status and text. */
static cudnnStatus_t failed_status;
static char failed_call[160];

#define TRY(call)                                                                                  \
    do {                                                                                           \
        cudnnStatus_t s_ = (call);                                                                 \
        if (s_ != CUDNN_STATUS_SUCCESS) {                                                          \
            failed_status = s_;                                                                    \
            snprintf(failed_call, sizeof failed_call, "%s", #call);                                \
            return s_;                                                                             \
        }                                                                                          \
    } while (0)

/* Every descriptor one attention made, destroyed together. */
typedef struct {
    cudnnBackendDescriptor_t d[96];
    int n;
} Pool;

static cudnnStatus_t make(Pool *p, cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t *out) {
    TRY(cudnnBackendCreateDescriptor(type, out));
    p->d[p->n++] = *out;
    return CUDNN_STATUS_SUCCESS;
}

static void destroy_all(Pool *p) {
    for (int i = p->n - 1; i >= 0; i--) {
        cudnnBackendDestroyDescriptor(p->d[i]);
    }
    p->n = 0;
}

static cudnnStatus_t set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                         int64_t count, const void *value) {
    return cudnnBackendSetAttribute(d, name, type, count, value);
}

/* A tensor of 4 dimensions (rank 1 for the unified operation's scale). */
static cudnnStatus_t tensor_of_rank(Pool *p, cudnnBackendDescriptor_t *out, int64_t uid, cudnnDataType_t type,
                                    int64_t rank, const int64_t *dims, const int64_t *strides, bool is_virtual,
                                    bool by_value) {
    int64_t alignment = 16;
    TRY(make(p, CUDNN_BACKEND_TENSOR_DESCRIPTOR, out));
    TRY(set(*out, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type));
    TRY(set(*out, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, rank, dims));
    TRY(set(*out, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, rank, strides));
    TRY(set(*out, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
    TRY(set(*out, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment));
    /* The frontend sets either flag only when it is true. */
    if (is_virtual) {
        TRY(set(*out, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual));
    }
    if (by_value) {
        TRY(set(*out, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value));
    }
    TRY(cudnnBackendFinalize(*out));
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t tensor(Pool *p, cudnnBackendDescriptor_t *out, int64_t uid, cudnnDataType_t type,
                            const int64_t dims[4], const int64_t strides[4], bool is_virtual, bool by_value) {
    return tensor_of_rank(p, out, uid, type, 4, dims, strides, is_virtual, by_value);
}

/* y = mode(x[, b][, t]); axis >= 0 for GEN_INDEX. */
static cudnnStatus_t pointwise(Pool *p, cudnnBackendDescriptor_t *op, cudnnPointwiseMode_t mode, cudnnDataType_t math,
                               int64_t axis, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                               cudnnBackendDescriptor_t t, cudnnBackendDescriptor_t y) {
    cudnnBackendDescriptor_t pw;
    float one = 1.0f;
    TRY(make(p, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, &pw));
    TRY(set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode));
    TRY(set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &math));
    if (axis >= 0) {
        TRY(set(pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis));
    }
    TRY(cudnnBackendFinalize(pw));
    TRY(make(p, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, op));
    TRY(set(*op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw));
    TRY(set(*op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
    if (b) {
        TRY(set(*op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b));
    }
    if (t) {
        TRY(set(*op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t));
    }
    TRY(set(*op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
    TRY(set(*op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &one));
    TRY(set(*op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &one));
    TRY(cudnnBackendFinalize(*op));
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t reduction(Pool *p, cudnnBackendDescriptor_t *op, cudnnReduceTensorOp_t how,
                               cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y) {
    cudnnBackendDescriptor_t r;
    cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    TRY(make(p, CUDNN_BACKEND_REDUCTION_DESCRIPTOR, &r));
    TRY(set(r, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &how));
    TRY(set(r, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32));
    if (cudnnGetVersion() >= 91100) { /* the frontend sets the flag from 9.11 */
        bool deterministic = false;
        TRY(set(r, CUDNN_ATTR_REDUCTION_IS_DETERMINISTIC, CUDNN_TYPE_BOOLEAN, 1, &deterministic));
    }
    TRY(cudnnBackendFinalize(r));
    TRY(make(p, CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, op));
    TRY(set(*op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
    TRY(set(*op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
    TRY(set(*op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &r));
    TRY(cudnnBackendFinalize(*op));
    return CUDNN_STATUS_SUCCESS;
}

static cudnnStatus_t matmul(Pool *p, cudnnBackendDescriptor_t *op, cudnnBackendDescriptor_t a,
                            cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t c) {
    cudnnBackendDescriptor_t m;
    cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    TRY(make(p, CUDNN_BACKEND_MATMUL_DESCRIPTOR, &m));
    TRY(set(m, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32));
    double padding = 0.0; /* frontend 1.15 always sets it */
    TRY(set(m, CUDNN_ATTR_MATMUL_PADDING_VALUE, CUDNN_TYPE_DOUBLE, 1, &padding));
    TRY(cudnnBackendFinalize(m));
    TRY(make(p, CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, op));
    TRY(set(*op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a));
    TRY(set(*op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b));
    TRY(set(*op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c));
    TRY(set(*op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &m));
    TRY(cudnnBackendFinalize(*op));
    return CUDNN_STATUS_SUCCESS;
}

enum { UID_Q = 1, UID_K = 2, UID_V = 3, UID_O = 4, UID_SCALE = 5, UID_NEG_INF = 6, UID_STATS = 7 };

/* How the composite graph's softmax statistics (max + log(sum), per row) appear: 0 not at all, 1 virtual (the
   frontend's, and the cases'), 2 an output. Other than 1 only in the diagnostic builds before the cases. */
static int stats_mode = 1;

/* The two graphs, as AttentionGraph.Form. */
enum { FORM_UNIFIED = 0, FORM_COMPOSITE = 1 };
static const char *form_names[] = {"one SDPA_FWD operation", "the composite graph"};

typedef struct {
    int64_t b, h, sq, skv, d;
    bool bf16;
    bool causal;
} Shape;

typedef struct {
    Pool pool;
    cudnnBackendDescriptor_t plan;
    int64_t workspace;
    int64_t configs;      /* the heuristic's engine configurations */
    int64_t chosen;       /* the one whose plan finalized */
    int form;             /* the graph built */
    int64_t engine;       /* its engine's global index */
    float scale;          /* host memory the variant pack points at (by value) */
    float neg_inf;
    double build_ms;
} Attention;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static cudnnStatus_t build_form(cudnnHandle_t handle, const Shape *s, Attention *a, int form) {
    Pool *p = &a->pool;
    cudnnDataType_t io = s->bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
    int64_t b = s->b, h = s->h, sq = s->sq, skv = s->skv, d = s->d;
    int64_t qd[4] = {b, h, sq, d}, qs[4] = {h * sq * d, sq * d, d, 1};
    int64_t ktd[4] = {b, h, d, skv}, kts[4] = {h * skv * d, skv * d, 1, d};
    int64_t vd[4] = {b, h, skv, d}, vs[4] = {h * skv * d, skv * d, d, 1};
    int64_t sd[4] = {b, h, sq, skv}, ss[4] = {h * sq * skv, sq * skv, skv, 1};
    int64_t rd[4] = {b, h, sq, 1}, rs[4] = {h * sq, sq, 1, 1};
    int64_t one[4] = {1, 1, 1, 1};
    int64_t uid = 100;
    cudnnBackendDescriptor_t q, kt, v, o, scale, s0, s1, ops[20];
    int n = 0;
    double start = now_ms();
    a->scale = 1.0f / sqrtf((float) d);
    a->neg_inf = -INFINITY;

    a->form = form;
    if (form == FORM_UNIFIED) {
        /* The frontend's UnifiedSDPANode: K as stored (BHSD), the scale of rank 1 (made after the node's tensors
           are filled in, so never widened to 4 as a pointwise input is). */
        cudnnBackendDescriptor_t k, sdpa;
        int64_t scale_dim = 1;
        TRY(tensor(p, &q, UID_Q, io, qd, qs, false, false));
        TRY(tensor(p, &k, UID_K, io, vd, vs, false, false));
        TRY(tensor(p, &v, UID_V, io, vd, vs, false, false));
        TRY(tensor(p, &o, UID_O, io, qd, qs, false, false));
        TRY(tensor_of_rank(p, &scale, UID_SCALE, CUDNN_DATA_FLOAT, 1, &scale_dim, &scale_dim, false, true));
        TRY(make(p, CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR, &sdpa));
        TRY(set(sdpa, CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &q));
        TRY(set(sdpa, CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &k));
        TRY(set(sdpa, CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v));
        TRY(set(sdpa, CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &o));
        TRY(set(sdpa, CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &scale));
        TRY(cudnnBackendFinalize(sdpa));
        ops[n++] = sdpa;
        goto graph;
    }
    TRY(tensor(p, &q, UID_Q, io, qd, qs, false, false));
    TRY(tensor(p, &kt, UID_K, io, ktd, kts, false, false));
    TRY(tensor(p, &v, UID_V, io, vd, vs, false, false));
    TRY(tensor(p, &o, UID_O, io, qd, qs, false, false));
    TRY(tensor(p, &scale, UID_SCALE, CUDNN_DATA_FLOAT, one, one, false, true));
    TRY(tensor(p, &s0, uid++, CUDNN_DATA_FLOAT, sd, ss, true, false));
    TRY(matmul(p, &ops[n++], q, kt, s0));
    TRY(tensor(p, &s1, uid++, CUDNN_DATA_FLOAT, sd, ss, true, false));
    TRY(pointwise(p, &ops[n++], CUDNN_POINTWISE_MUL, CUDNN_DATA_FLOAT, -1, s0, scale, NULL, s1));
    if (s->causal) {
        cudnnBackendDescriptor_t row, col, keep, neg_inf, masked;
        TRY(tensor(p, &row, uid++, CUDNN_DATA_INT32, sd, ss, true, false));
        TRY(pointwise(p, &ops[n++], CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, 2, s1, NULL, NULL, row));
        TRY(tensor(p, &col, uid++, CUDNN_DATA_INT32, sd, ss, true, false));
        TRY(pointwise(p, &ops[n++], CUDNN_POINTWISE_GEN_INDEX, CUDNN_DATA_FLOAT, 3, s1, NULL, NULL, col));
        TRY(tensor(p, &keep, uid++, CUDNN_DATA_BOOLEAN, sd, ss, true, false));
        TRY(pointwise(p, &ops[n++], CUDNN_POINTWISE_CMP_GE, CUDNN_DATA_BOOLEAN, -1, row, col, NULL, keep));
        TRY(tensor(p, &neg_inf, UID_NEG_INF, CUDNN_DATA_FLOAT, one, one, false, true));
        TRY(tensor(p, &masked, uid++, CUDNN_DATA_FLOAT, sd, ss, true, false));
        TRY(pointwise(p, &ops[n++], CUDNN_POINTWISE_BINARY_SELECT, CUDNN_DATA_FLOAT, -1, s1, neg_inf, keep, masked));
        s1 = masked;
    }
    cudnnBackendDescriptor_t max, centered, e, sum, prob;
    TRY(tensor(p, &max, uid++, CUDNN_DATA_FLOAT, rd, rs, true, false));
    TRY(reduction(p, &ops[n++], CUDNN_REDUCE_TENSOR_MAX, s1, max));
    TRY(tensor(p, &centered, uid++, CUDNN_DATA_FLOAT, sd, ss, true, false));
    TRY(pointwise(p, &ops[n++], CUDNN_POINTWISE_SUB, CUDNN_DATA_FLOAT, -1, s1, max, NULL, centered));
    TRY(tensor(p, &e, uid++, CUDNN_DATA_FLOAT, sd, ss, true, false));
    TRY(pointwise(p, &ops[n++], CUDNN_POINTWISE_EXP, CUDNN_DATA_FLOAT, -1, centered, NULL, NULL, e));
    TRY(tensor(p, &sum, uid++, CUDNN_DATA_FLOAT, rd, rs, true, false));
    TRY(reduction(p, &ops[n++], CUDNN_REDUCE_TENSOR_ADD, e, sum));
    if (stats_mode > 0) {
        /* The statistics max + log(sum): cudnn-frontend's composite softmax adds them even when
           nobody reads them (a virtual tensor), and the fused engines' pattern expects them. */
        cudnnBackendDescriptor_t log_sum, stats;
        TRY(tensor(p, &log_sum, uid++, CUDNN_DATA_FLOAT, rd, rs, true, false));
        TRY(pointwise(p, &ops[n++], CUDNN_POINTWISE_LOG, CUDNN_DATA_FLOAT, -1, sum, NULL, NULL, log_sum));
        TRY(tensor(p, &stats, stats_mode == 2 ? UID_STATS : uid++, CUDNN_DATA_FLOAT, rd, rs, stats_mode == 1, false));
        TRY(pointwise(p, &ops[n++], CUDNN_POINTWISE_ADD, CUDNN_DATA_FLOAT, -1, max, log_sum, NULL, stats));
    }
    TRY(tensor(p, &prob, uid++, io, sd, ss, true, false));
    TRY(pointwise(p, &ops[n++], CUDNN_POINTWISE_DIV, CUDNN_DATA_FLOAT, -1, e, sum, NULL, prob));
    TRY(matmul(p, &ops[n++], prob, v, o));

graph:;
    cudnnBackendDescriptor_t graph, heur;
    TRY(make(p, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &graph));
    TRY(set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n, ops));
    TRY(set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle));
    TRY(cudnnBackendFinalize(graph));
    TRY(make(p, CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur));
    TRY(set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph));
    cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    TRY(set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode));
    TRY(cudnnBackendFinalize(heur));
    int64_t count = 0;
    TRY(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, NULL));
    a->configs = count;
    if (count == 0) {
        failed_status = CUDNN_STATUS_NOT_SUPPORTED;
        snprintf(failed_call, sizeof failed_call, "the heuristic returned no engine configuration");
        return failed_status;
    }
    cudnnBackendDescriptor_t configs[32];
    if (count > 32) {
        count = 32;
    }
    for (int64_t i = 0; i < count; i++) {
        TRY(make(p, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &configs[i]));
    }
    int64_t returned = 0;
    TRY(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned,
                                 configs));
    cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
    for (int64_t i = 0; i < returned; i++) {
        cudnnBackendDescriptor_t plan;
        TRY(make(p, CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan));
        TRY(set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle));
        TRY(set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &configs[i]));
        last = cudnnBackendFinalize(plan);
        if (last == CUDNN_STATUS_SUCCESS) {
            a->plan = plan;
            a->chosen = i;
            TRY(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &count,
                                         &a->workspace));
            cudnnBackendDescriptor_t engine;
            TRY(make(p, CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine));
            int64_t got = 0;
            a->engine = -1;
            if (cudnnBackendGetAttribute(configs[i], CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got,
                                         &engine) == CUDNN_STATUS_SUCCESS) {
                cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &got, &a->engine);
            }
            a->build_ms = now_ms() - start;
            return CUDNN_STATUS_SUCCESS;
        }
    }
    failed_status = last;
    snprintf(failed_call, sizeof failed_call, "cudnnBackendFinalize(plan) of each of %lld configurations",
             (long long) returned);
    return last;
}

/* The forms AttentionGraph.forms tries for s, in order; returns how many. */
static int forms_of(const Shape *s, int forms[2]) {
    int n = 0;
    if (!s->causal && cudnnGetVersion() >= 91301) {
        forms[n++] = FORM_UNIFIED;
    }
    forms[n++] = FORM_COMPOSITE;
    return n;
}

/* Builds the first form that builds (AttentionGraph.build); a refused form's descriptors are destroyed first.
   refusals gets "form: status at call" of each refused form. */
static cudnnStatus_t build(cudnnHandle_t handle, const Shape *s, Attention *a, char *refusals, size_t size) {
    int forms[2];
    int n = forms_of(s, forms);
    cudnnStatus_t st = CUDNN_STATUS_NOT_SUPPORTED;
    if (refusals) refusals[0] = 0;
    for (int f = 0; f < n; f++) {
        st = build_form(handle, s, a, forms[f]);
        if (st == CUDNN_STATUS_SUCCESS) {
            return st;
        }
        if (refusals) {
            size_t used = strlen(refusals);
            snprintf(refusals + used, size - used, "%s%s refused: %s at %s", used ? "; " : "", form_names[forms[f]],
                     cudnnGetErrorString(st), failed_call);
        }
        destroy_all(&a->pool);
    }
    return st;
}

/* fp16 and bf16 from and to float, round to nearest even. */
static uint16_t to_half(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    int32_t exp = (int32_t) ((x >> 23) & 0xff) - 127 + 15;
    uint32_t mant = x & 0x7fffff;
    if (exp <= 0) {
        if (exp < -10) {
            return (uint16_t) sign;
        }
        mant |= 0x800000;
        uint32_t shift = (uint32_t) (14 - exp);
        uint32_t half = mant >> shift;
        uint32_t rest = mant & ((1u << shift) - 1);
        uint32_t mid = 1u << (shift - 1);
        if (rest > mid || (rest == mid && (half & 1))) {
            half++;
        }
        return (uint16_t) (sign | half);
    }
    if (exp >= 31) {
        return (uint16_t) (sign | 0x7c00);
    }
    uint32_t h = sign | ((uint32_t) exp << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) {
        h++;
    }
    return (uint16_t) h;
}

static float from_half(uint16_t h) {
    uint32_t sign = (uint32_t) (h & 0x8000) << 16;
    int32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    uint32_t x;
    if (exp == 0) {
        if (mant == 0) {
            x = sign;
        } else {
            float f = ldexpf((float) mant, -24);
            memcpy(&x, &f, 4);
            x |= sign;
        }
    } else if (exp == 31) {
        x = sign | 0x7f800000 | (mant << 13);
    } else {
        x = sign | ((uint32_t) (exp - 15 + 127) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static uint16_t to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    return (uint16_t) ((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

static float from_bf16(uint16_t b) {
    uint32_t x = (uint32_t) b << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static float uniform(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float) ((rng >> 11) * 0x1p-53) * 2.0f - 1.0f;
}

/* Runs one shape eagerly; returns its worst error as a fraction of its tolerance (or -1 on a mismatch). */
static double check(const Shape *s, const uint16_t *hq, const uint16_t *hk, const uint16_t *hv, const uint16_t *ho,
                    float scale) {
    float (*from)(uint16_t) = s->bf16 ? from_bf16 : from_half;
    double unit = s->bf16 ? 0x1p-8 : 0x1p-11;
    double worst = 0;
    double *p = malloc(sizeof(double) * (size_t) s->skv);
    for (int64_t bh = 0; bh < s->b * s->h; bh++) {
        const uint16_t *q = hq + bh * s->sq * s->d, *k = hk + bh * s->skv * s->d, *v = hv + bh * s->skv * s->d;
        const uint16_t *o = ho + bh * s->sq * s->d;
        for (int64_t i = 0; i < s->sq; i++) {
            double max = -INFINITY;
            for (int64_t j = 0; j < s->skv; j++) {
                double dot = 0;
                for (int64_t c = 0; c < s->d; c++) {
                    dot += (double) from(q[i * s->d + c]) * from(k[j * s->d + c]);
                }
                p[j] = (s->causal && j > i) ? -INFINITY : dot * scale;
                if (p[j] > max) {
                    max = p[j];
                }
            }
            double sum = 0;
            for (int64_t j = 0; j < s->skv; j++) {
                p[j] = exp(p[j] - max);
                sum += p[j];
            }
            for (int64_t c = 0; c < s->d; c++) {
                double expected = 0, magnitude = 0;
                for (int64_t j = 0; j < s->skv; j++) {
                    double w = p[j] / sum;
                    expected += w * from(v[j * s->d + c]);
                    magnitude += w * fabs(from(v[j * s->d + c]));
                }
                double got = from(o[i * s->d + c]);
                /* P is rounded to the inputs' type before P V, and O to the output's: two units each, plus fp32 sums. */
                double tolerance = 4 * unit * (magnitude + fabs(expected)) + 1e-5;
                double error = fabs(got - expected);
                if (!(error <= tolerance)) {
                    printf("  mismatch at bh %lld row %lld col %lld: %g, the CPU says %g (tolerance %g)\n",
                           (long long) bh, (long long) i, (long long) c, got, expected, tolerance);
                    free(p);
                    return -1;
                }
                if (error / tolerance > worst) {
                    worst = error / tolerance;
                }
            }
        }
    }
    free(p);
    return worst;
}

int main(void) {
    Shape shapes[] = {
        {1, 1, 64, 64, 64, false, false},   {1, 1, 64, 64, 64, false, true},    {2, 4, 128, 256, 64, false, false},
        {2, 4, 128, 256, 64, true, true},   {1, 8, 512, 512, 128, false, true}, {1, 8, 512, 512, 128, true, false},
        {2, 2, 100, 77, 64, true, true},    {1, 2, 256, 128, 64, false, true},  {1, 2, 64, 64, 256, false, false},
        {1, 1, 64, 64, 72, false, false},   {1, 1, 64, 64, 8, true, true},
    };
    /* Shapes the engines are expected to refuse: the status is what a caller must see. */
    Shape refused[] = {{1, 1, 64, 64, 264, false, false}, {1, 1, 64, 64, 60, false, false}};
    int count = (int) (sizeof shapes / sizeof shapes[0]);
    char modes[400] = "";
    cudnnHandle_t handle;
    cudaStream_t stream;
    CUDA(cudaStreamCreate(&stream));
    if (cudnnCreate(&handle) != CUDNN_STATUS_SUCCESS) {
        printf("CUDNN-SDPA c: cudnnCreate failed\n");
        return 2;
    }
    cudnnSetStream(handle, stream);
    printf("cuDNN %zu (headers %d), cudart %d\n", cudnnGetVersion(), CUDNN_VERSION, CUDART_VERSION);
    /* Diagnostics on the first shape (no mask): each form alone, and the composite graph with its statistics
       absent, virtual (the frontend's: the cases use it) and an output. */
    for (int m = -1; m <= 2; m++) {
        Attention t;
        memset(&t, 0, sizeof t);
        if (m == -1 && cudnnGetVersion() < 91301) {
            snprintf(modes, sizeof modes, "SDPA_FWD: not in this cuDNN");
            continue;
        }
        stats_mode = m < 0 ? 1 : m;
        cudnnStatus_t st = build_form(handle, &shapes[0], &t, m < 0 ? FORM_UNIFIED : FORM_COMPOSITE);
        size_t used = strlen(modes);
        snprintf(modes + used, sizeof modes - used, "%s%s: %s", used ? ", " : "",
                 m < 0 ? "SDPA_FWD" : m == 0 ? "composite, stats absent" : m == 1 ? "composite, stats virtual"
                                                                             : "composite, stats an output",
                 cudnnGetErrorString(st));
        if (st != CUDNN_STATUS_SUCCESS) {
            char detail[4096];
            cudnnGetLastErrorString(detail, sizeof detail);
            printf("diagnostic %d: %s at %s; %s\n", m, cudnnGetErrorString(st), failed_call, detail);
        }
        destroy_all(&t.pool);
    }
    stats_mode = 1;
    printf("first shape: %s\n", modes);
    int built[2] = {0, 0};
    int right = 0;
    double worst = 0;
    char capture[200] = "not run";
    char refusals[600] = "";
    char vp_refinal[120] = "";
    for (int c = 0; c < count; c++) {
        const Shape *s = &shapes[c];
        size_t nq = (size_t) (s->b * s->h * s->sq * s->d), nk = (size_t) (s->b * s->h * s->skv * s->d);
        uint16_t *hq = malloc(nq * 2), *hk = malloc(nk * 2), *hv = malloc(nk * 2), *ho = malloc(nq * 2);
        uint16_t (*to)(float) = s->bf16 ? to_bf16 : to_half;
        for (size_t i = 0; i < nq; i++) hq[i] = to(uniform());
        for (size_t i = 0; i < nk; i++) hk[i] = to(uniform());
        for (size_t i = 0; i < nk; i++) hv[i] = to(uniform());
        void *dq, *dk, *dv, *dout, *ws = NULL;
        CUDA(cudaMalloc(&dq, nq * 2));
        CUDA(cudaMalloc(&dk, nk * 2));
        CUDA(cudaMalloc(&dv, nk * 2));
        CUDA(cudaMalloc(&dout, nq * 2));
        CUDA(cudaMemcpy(dq, hq, nq * 2, cudaMemcpyHostToDevice));
        CUDA(cudaMemcpy(dk, hk, nk * 2, cudaMemcpyHostToDevice));
        CUDA(cudaMemcpy(dv, hv, nk * 2, cudaMemcpyHostToDevice));
        CUDA(cudaMemset(dout, 0xff, nq * 2)); /* NaN in fp16 and bf16: an unwritten element shows */
        Attention a;
        memset(&a, 0, sizeof a);
        char why[600];
        cudnnStatus_t st = build(handle, s, &a, why, sizeof why);
        printf("(%lld,%lld,%lld,%lld,%lld) %s%s: ", (long long) s->b, (long long) s->h, (long long) s->sq,
               (long long) s->skv, (long long) s->d, s->bf16 ? "bf16" : "fp16", s->causal ? " causal" : "");
        if (st != CUDNN_STATUS_SUCCESS) {
            char detail[4096];
            cudnnGetLastErrorString(detail, sizeof detail);
            printf("NOT BUILT: %s; %s\n", why, detail);
        } else {
            built[a.form]++;
            printf("[%s%s%s] ", form_names[a.form], why[0] ? "; " : "", why);
            if (a.workspace > 0) {
                CUDA(cudaMalloc(&ws, (size_t) a.workspace));
            }
            cudnnBackendDescriptor_t pack;
            /* As gatun's Attention: Q, K, V, O, the scale, and for a causal mask the -inf. */
            int64_t uids[6] = {UID_Q, UID_K, UID_V, UID_O, UID_SCALE, UID_NEG_INF};
            void *pointers[6] = {dq, dk, dv, dout, &a.scale, &a.neg_inf};
            int n = s->causal ? 6 : 5;
            cudnnStatus_t vs = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack);
            if (vs == 0) vs = set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids);
            if (vs == 0) vs = set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, pointers);
            if (vs == 0) vs = set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
            if (vs == 0) vs = cudnnBackendFinalize(pack);
            if (vs == 0 && c == 0) {
                /* May a finalized variant pack take new pointers? (whether Gatun must rebuild it on an address change) */
                cudnnStatus_t again = set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, pointers);
                snprintf(vp_refinal, sizeof vp_refinal, "set after finalize: %s", cudnnGetErrorString(again));
            }
            double t0 = now_ms();
            if (vs == 0) vs = cudnnBackendExecute(handle, a.plan, pack);
            CUDA(cudaStreamSynchronize(stream));
            double run_ms = now_ms() - t0;
            if (vs != 0) {
                char detail[4096];
                cudnnGetLastErrorString(detail, sizeof detail);
                printf("NOT RUN: %s; %s\n", cudnnGetErrorString(vs), detail);
            } else {
                CUDA(cudaMemcpy(ho, dout, nq * 2, cudaMemcpyDeviceToHost));
                double w = check(s, hq, hk, hv, ho, a.scale);
                printf("%s, worst %.3f of tolerance; workspace %lld B; config %lld of %lld (engine %lld); "
                       "plan built in %.0f ms, first run %.2f ms\n",
                       w >= 0 ? "right" : "WRONG", w, (long long) a.workspace, (long long) a.chosen,
                       (long long) a.configs, (long long) a.engine, a.build_ms, run_ms);
                if (w >= 0) {
                    right++;
                    if (w > worst) worst = w;
                }
                if (c == 3 && w >= 0) {
                    /* Captured into a graph and replayed 100 times: each replay bit for bit the eager result. */
                    uint16_t *replayed = malloc(nq * 2);
                    cudaGraph_t graph;
                    cudaGraphExec_t exec;
                    CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
                    cudnnStatus_t cs = cudnnBackendExecute(handle, a.plan, pack);
                    CUDA(cudaStreamEndCapture(stream, &graph));
                    int exact = 0;
                    if (cs == 0) {
                        CUDA(cudaGraphInstantiate(&exec, graph, 0));
                        for (int r = 0; r < 100; r++) {
                            CUDA(cudaMemsetAsync(dout, 0xff, nq * 2, stream));
                            CUDA(cudaGraphLaunch(exec, stream));
                            CUDA(cudaMemcpyAsync(replayed, dout, nq * 2, cudaMemcpyDeviceToHost, stream));
                            CUDA(cudaStreamSynchronize(stream));
                            exact += memcmp(replayed, ho, nq * 2) == 0;
                        }
                        CUDA(cudaGraphExecDestroy(exec));
                        snprintf(capture, sizeof capture, "%d/100 replays exact", exact);
                    } else {
                        snprintf(capture, sizeof capture, "capture refused: %s", cudnnGetErrorString(cs));
                    }
                    CUDA(cudaGraphDestroy(graph));
                    free(replayed);
                    if (exact != 100) right--;
                }
            }
            cudnnBackendDestroyDescriptor(pack);
            destroy_all(&a.pool);
        }
        cudaFree(dq);
        cudaFree(dk);
        cudaFree(dv);
        cudaFree(dout);
        if (ws) cudaFree(ws);
        free(hq);
        free(hk);
        free(hv);
        free(ho);
    }
    for (size_t r = 0; r < sizeof refused / sizeof refused[0]; r++) {
        Attention a;
        memset(&a, 0, sizeof a);
        cudnnStatus_t st = build(handle, &refused[r], &a, NULL, 0);
        size_t used = strlen(refusals);
        snprintf(refusals + used, sizeof refusals - used, "%sd=%lld: %s%s%s", used ? ", " : "",
                 (long long) refused[r].d, st == 0 ? "BUILT (not refused)" : cudnnGetErrorString(st),
                 st == 0 ? "" : " at ", st == 0 ? "" : failed_call);
        destroy_all(&a.pool);
    }
    cudnnDestroy(handle);
    CUDA(cudaStreamDestroy(stream));
    printf("CUDNN-SDPA c: %d/%d attentions right against the CPU (fp16 and bf16, causal and not, 64x64 to 512x512, "
           "head dims 8 to 256), worst error %.3f of its tolerance; graphs built: %d %s, %d %s; first shape: %s; "
           "captured and replayed: %s; variant pack %s; refused: %s\n",
           right, count, worst, built[FORM_UNIFIED], form_names[FORM_UNIFIED], built[FORM_COMPOSITE],
           form_names[FORM_COMPOSITE], modes, capture, vp_refinal, refusals);
    return right == count ? 0 : 1;
}
