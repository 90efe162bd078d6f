// The C twin of BlasThroughputGpuTest (src-test-gpu): the same GEMMs through the same cuBLASLt and
// cuBLAS, with nothing of Gatun between, so the two lines compare what Gatun adds.
//   throughput: an 8192^3 fp16 GEMM (fp16 A, B and D, fp32 accumulation), 10 per round between
//               two events on one stream: TFLOPS = 10 * 2 * 8192^3 / elapsed;
//   host:       a 64^3 fp16 GEMM issued 10,000 times in a loop, the host's wall time per call
//               (the stream drained before and after, outside the timed loop).
// Seven rounds, each measuring all four in turn (interleaved); the medians are printed as
//   BLAS-THROUGHPUT c: cuBLASLt 8192^3 fp16 X TFLOPS, cuBLAS Y TFLOPS; host per 64^3 fp16 GEMM:
//   cuBLASLt A us, cuBLAS B us (medians of 7 interleaved rounds)
// Each library gets a 32 MiB workspace, as Gatun's default; cuBLAS's stream and workspace are set
// per call, as Gatun sets them (its one handle serves every stream).
// Exit status: 0, or 2 on a CUDA or cuBLAS error (named).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CUDA(call)                                                                                 \
    do {                                                                                           \
        cudaError_t r_ = (call);                                                                   \
        if (r_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "probe: %s failed: %s, line %d\n", #call, cudaGetErrorName(r_), __LINE__); \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)
#define BLAS(call)                                                                                 \
    do {                                                                                           \
        cublasStatus_t r_ = (call);                                                                \
        if (r_ != CUBLAS_STATUS_SUCCESS) {                                                         \
            fprintf(stderr, "probe: %s failed: %s, line %d\n", #call, cublasGetStatusName(r_), __LINE__); \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

#define ROUNDS 7
#define BIG 8192
#define SMALL 64
#define BIG_PER_ROUND 10
#define SMALL_PER_ROUND 10000
#define WORKSPACE (32u << 20)

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static double median(double *v) {
    qsort(v, ROUNDS, sizeof(double), compare);
    return v[ROUNDS / 2];
}

/** One cuBLASLt matmul of n^3 fp16 with its algorithm chosen once, as Gatun's Matmul prepares it. */
typedef struct {
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t layout;
    cublasLtMatmulAlgo_t algo;
} Lt;

static Lt lt_prepare(cublasLtHandle_t lt, int n) {
    Lt m;
    cublasOperation_t op = CUBLAS_OP_N;
    BLAS(cublasLtMatmulDescCreate(&m.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    BLAS(cublasLtMatmulDescSetAttribute(m.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op, sizeof(op)));
    BLAS(cublasLtMatmulDescSetAttribute(m.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op, sizeof(op)));
    BLAS(cublasLtMatrixLayoutCreate(&m.layout, CUDA_R_16F, n, n, n));
    cublasLtMatmulPreference_t pref;
    BLAS(cublasLtMatmulPreferenceCreate(&pref));
    size_t ws = WORKSPACE;
    BLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
    cublasLtMatmulHeuristicResult_t result;
    int found = 0;
    BLAS(cublasLtMatmulAlgoGetHeuristic(lt, m.desc, m.layout, m.layout, m.layout, m.layout, pref, 1, &result, &found));
    if (found == 0) {
        fprintf(stderr, "probe: no cuBLASLt algorithm for %d^3 fp16\n", n);
        exit(2);
    }
    m.algo = result.algo;
    BLAS(cublasLtMatmulPreferenceDestroy(pref));
    return m;
}

int main(void) {
    const float one = 1.0f, zero = 0.0f;
    size_t big = (size_t) BIG * BIG * 2;
    void *a, *b, *d, *sa, *sb, *sd, *workspace;
    CUDA(cudaMalloc(&a, big));
    CUDA(cudaMalloc(&b, big));
    CUDA(cudaMalloc(&d, big));
    CUDA(cudaMalloc(&sa, SMALL * SMALL * 2));
    CUDA(cudaMalloc(&sb, SMALL * SMALL * 2));
    CUDA(cudaMalloc(&sd, SMALL * SMALL * 2));
    CUDA(cudaMalloc(&workspace, WORKSPACE));
    CUDA(cudaMemset(a, 0x3c, big)); // 0x3c3c: about 1.06 in fp16
    CUDA(cudaMemset(b, 0x3c, big));
    CUDA(cudaMemset(sa, 0x3c, SMALL * SMALL * 2));
    CUDA(cudaMemset(sb, 0x3c, SMALL * SMALL * 2));
    cudaStream_t s;
    CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t start, stop;
    CUDA(cudaEventCreate(&start));
    CUDA(cudaEventCreate(&stop));
    cublasLtHandle_t lt;
    cublasHandle_t blas;
    BLAS(cublasLtCreate(&lt));
    BLAS(cublasCreate(&blas));
    Lt bigLt = lt_prepare(lt, BIG);
    Lt smallLt = lt_prepare(lt, SMALL);

    double tflopsLt[ROUNDS], tflopsBlas[ROUNDS], hostLt[ROUNDS], hostBlas[ROUNDS];
    for (int r = -1; r < ROUNDS; r++) { // round -1 warms every path
        float ms;
        CUDA(cudaEventRecord(start, s));
        for (int i = 0; i < BIG_PER_ROUND; i++) {
            BLAS(cublasLtMatmul(lt, bigLt.desc, &one, a, bigLt.layout, b, bigLt.layout, &zero, d, bigLt.layout, d,
                    bigLt.layout, &bigLt.algo, workspace, WORKSPACE, s));
        }
        CUDA(cudaEventRecord(stop, s));
        CUDA(cudaEventSynchronize(stop));
        CUDA(cudaEventElapsedTime(&ms, start, stop));
        double flops = 2.0 * BIG * BIG * (double) BIG * BIG_PER_ROUND;
        if (r >= 0) tflopsLt[r] = flops / (ms * 1e-3) / 1e12;

        CUDA(cudaEventRecord(start, s));
        for (int i = 0; i < BIG_PER_ROUND; i++) {
            BLAS(cublasSetStream(blas, s));
            BLAS(cublasSetWorkspace(blas, workspace, WORKSPACE));
            BLAS(cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, BIG, BIG, BIG, &one, a, CUDA_R_16F, BIG, b, CUDA_R_16F, BIG,
                    &zero, d, CUDA_R_16F, BIG, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        }
        CUDA(cudaEventRecord(stop, s));
        CUDA(cudaEventSynchronize(stop));
        CUDA(cudaEventElapsedTime(&ms, start, stop));
        if (r >= 0) tflopsBlas[r] = flops / (ms * 1e-3) / 1e12;

        CUDA(cudaStreamSynchronize(s));
        double t0 = now_us();
        for (int i = 0; i < SMALL_PER_ROUND; i++) {
            BLAS(cublasLtMatmul(lt, smallLt.desc, &one, sa, smallLt.layout, sb, smallLt.layout, &zero, sd, smallLt.layout,
                    sd, smallLt.layout, &smallLt.algo, workspace, WORKSPACE, s));
        }
        double t1 = now_us();
        CUDA(cudaStreamSynchronize(s));
        if (r >= 0) hostLt[r] = (t1 - t0) / SMALL_PER_ROUND;

        t0 = now_us();
        for (int i = 0; i < SMALL_PER_ROUND; i++) {
            BLAS(cublasSetStream(blas, s));
            BLAS(cublasSetWorkspace(blas, workspace, WORKSPACE));
            BLAS(cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, SMALL, SMALL, SMALL, &one, sa, CUDA_R_16F, SMALL, sb,
                    CUDA_R_16F, SMALL, &zero, sd, CUDA_R_16F, SMALL, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        }
        t1 = now_us();
        CUDA(cudaStreamSynchronize(s));
        if (r >= 0) hostBlas[r] = (t1 - t0) / SMALL_PER_ROUND;
    }
    printf("BLAS-THROUGHPUT c: cuBLASLt %d^3 fp16 %.1f TFLOPS, cuBLAS %.1f TFLOPS; host per %d^3 fp16 GEMM: "
           "cuBLASLt %.2f us, cuBLAS %.2f us (medians of %d interleaved rounds)\n",
           BIG, median(tflopsLt), median(tflopsBlas), SMALL, median(hostLt), median(hostBlas), ROUNDS);
    return 0;
}
