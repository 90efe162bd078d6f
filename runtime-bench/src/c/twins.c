/*
 * The C twin of Gatun's comparison rows (runtime-bench, issue 11): each row's operation made
 * with plain driver API calls and timed exactly as dev.gatun.cuda.bench.Twin times Gatun's,
 * in its own process: a warm-up of N/2 operations and a stream sync, then N timed operations
 * and one final stream sync. It prints one line,
 *
 *     TWIN c ROW N TOTAL_NS -
 *
 * TOTAL_NS being that wall time (CLOCK_MONOTONIC, as Java's System.nanoTime); "-" where the
 * Java twin prints the bytes it allocated. The host-issue rows (issue_*) instead time batches
 * of 64 operations with no sync inside the timing, the stream drained before each batch outside
 * it, and TOTAL_NS is the sum of the batches. The set-up mirrors the Java twin's
 * (TwinWorkload): the primary context, one non-blocking stream, the kernels of the shared PTX,
 * the 4-argument kernel's buffers (in all 1.0f, out poisoned with NaN), then what the row needs.
 * Every driver call is checked; the first failure names the call and its CUresult and exits 1.
 *
 *   gcc -O2 -o twins twins.c -I/usr/local/cuda/include -L/usr/local/cuda/lib64/stubs -lcuda
 *   ./twins ROW N twins.ptx          (twins.ptx: nvcc -ptx -arch=sm_90 -o twins.ptx twins.cu)
 *
 * libcuda.so.1 is found at run time by the dynamic loader. Rows: see `./twins` without arguments.
 *
 * The same file is also a shared library whose gatun_twin_run runs a row inside the Java twin's
 * process (dev.gatun.cuda.bench.SameProcess), so that C and Java meet the same driver state:
 *
 *   gcc -O2 -shared -fPIC -o libtwins.so twins.c -I/usr/local/cuda/include \
 *       -L/usr/local/cuda/lib64/stubs -lcuda
 *
 * The GEMM rows (gemm_lt_64, gemm_64) call cuBLASLt and cuBLAS, which are no link dependency:
 * they are opened with dlopen by those rows alone (add -ldl where the C library lacks dlopen),
 * and their prototypes come from cublasLt.h when the include path has it. Where the headers or
 * the libraries are missing, those rows print "SKIP c ROW REASON" (exit status 0; -3 from
 * gatun_twin_run) and every other row works as before.
 */
#define _POSIX_C_SOURCE 200809L
#include <cuda.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The same numbers as the Java twin's (TwinSourcesTest checks that they are). */
#define TRANSFER_BYTES 268435456UL   /* TwinRow.TRANSFER_BYTES, 256 MiB */
#define ALLOCATION_BYTES 1048576UL   /* TwinRow.ALLOCATION_BYTES, 1 MiB */
#define BATCH 64                     /* TwinRow.BATCH */
#define FOUR_ELEMENTS 256            /* TwinRow.FOUR_ELEMENTS */
#define READBACK_VALUE 24589         /* TwinWorkload.READBACK_VALUE, 0x600d */
#define COPIES 64                    /* TwinRow.COPIES */
#define COPY_BYTES 4096              /* TwinRow.COPY_BYTES */
#define COPY_BUFFERS 4               /* TwinRow.COPY_BUFFERS */
#define GEMM_SIZE 64                 /* TwinRow.GEMM_SIZE: m, n and k */
#define GEMM_WORKSPACE_BYTES 33554432UL  /* Blas.DEFAULT_WORKSPACE_BYTES, 32 MiB */
#define HALF_ONE 15360               /* TwinWorkload.HALF_ONE, fp16 1.0 (0x3c00) */
#define HALF_NAN 32256               /* TwinWorkload.HALF_NAN, fp16 NaN (0x7e00) */
#define HALF_PRODUCT 21504           /* TwinWorkload.HALF_PRODUCT, fp16 64.0 (0x5400) */
#define NAN_BITS 0x7fc00000u
#define ONE_BITS 0x3f800000u         /* 1.0f */
/* What run_row returns for a row whose library (cuBLAS) is missing: reported as not run. */
#define SKIPPED 3

#define CHECK(call) do { CUresult r_ = (call); if (r_ != CUDA_SUCCESS) fail(#call, r_, __LINE__); } while (0)

static void fail(const char *call, CUresult r, int line) {
    const char *name = NULL;
    if (cuGetErrorName(r, &name) != CUDA_SUCCESS || name == NULL) {
        name = "an unknown CUresult";
    }
    fprintf(stderr, "twins.c:%d: %s failed: %s (%d)\n", line, call, name, (int) r);
    exit(1);
}

static CUstream stream;
static CUmodule module;
static CUfunction empty_fn, four_fn;
static CUdeviceptr in_buf, out_buf;
static CUevent event;
static CUmemoryPool pool;
static CUgraphExec graph;
static void *pinned;
static CUdeviceptr device_buf, word;
static int readback;
/* The mapped-word row: 8 bytes of pinned host memory mapped into the device, its device address, the last value written. */
static void *mapped;
static CUdeviceptr mapped_device;
static uint32_t written;
/*
 * The round-trip row: the two mapped words (host pointers and device addresses), the kernel that
 * answers on them and its own stream (the syncs of `stream` must not wait for it), and the
 * operations of the whole run, warm-up included, which is the kernel's n.
 */
static void *ping, *pong;
static CUdeviceptr ping_device, pong_device;
static CUfunction pingpong_fn;
static CUstream answering;
static long operations;
#define GAVE_UP (-1)                          /* what pingpong writes to pong when it gave up waiting */
#define ROUND_TRIP_PATIENCE_NS 5000000000L    /* TwinWorkload.ROUND_TRIP_PATIENCE_NANOS, 5 s */
#define POLLS_PER_CLOCK_READ 4096             /* TwinWorkload.POLLS_PER_CLOCK_READ */

/* The 4-argument kernel's arguments: cuLaunchKernel reads them through four_args at each call. */
static CUdeviceptr arg_out, arg_in;
static int arg_n;
static float arg_a;
static void *four_args[] = {&arg_out, &arg_n, &arg_a, &arg_in};

static void launch_empty(long i) {
    (void) i;
    CHECK(cuLaunchKernel(empty_fn, 1, 1, 1, 32, 1, 1, 0, stream, NULL, NULL));
}

static void launch_four(long i) {
    (void) i;
    CHECK(cuLaunchKernel(four_fn, 1, 1, 1, FOUR_ELEMENTS, 1, 1, 0, stream, four_args, NULL));
}

/* As the Java twin's setters: both pointers, n = 128 + (i & 127), a = i, then the launch. */
static void launch_four_set(long i) {
    arg_out = out_buf;
    arg_n = 128 + (int) (i & 127);
    arg_a = (float) i;
    arg_in = in_buf;
    launch_four(i);
}

static void launch_sync(long i) {
    launch_empty(i);
    CHECK(cuStreamSynchronize(stream));
}

static void replay(long i) {
    (void) i;
    CHECK(cuGraphLaunch(graph, stream));
}

static void record_query(long i) {
    (void) i;
    CHECK(cuEventRecord(event, stream));
    CUresult r = cuEventQuery(event);
    if (r != CUDA_ERROR_NOT_READY) {
        CHECK(r);
    }
}

static void record(long i) {
    (void) i;
    CHECK(cuEventRecord(event, stream));
}

static void upload(long i) {
    (void) i;
    CHECK(cuMemcpyHtoDAsync(device_buf, pinned, TRANSFER_BYTES, stream));
}

static void download(long i) {
    (void) i;
    CHECK(cuMemcpyDtoHAsync(pinned, device_buf, TRANSFER_BYTES, stream));
}

static void read_word(long i) {
    (void) i;
    CHECK(cuMemcpyDtoH(&readback, word, sizeof readback));
}

/* As the Java twin's MappedWord row: a stream write of the next value, then acquire loads until the host sees it. */
static void write_mapped_until_seen(long i) {
    (void) i;
    uint32_t v = ++written;
    CHECK(cuStreamWriteValue32(stream, mapped_device, v, CU_STREAM_WRITE_VALUE_DEFAULT));
    while (__atomic_load_n((volatile uint32_t *) mapped, __ATOMIC_ACQUIRE) != v) {
#if defined(__x86_64__)
        __builtin_ia32_pause(); /* as Thread.onSpinWait */
#endif
    }
}

static long long now_ns(void);

/*
 * As the Java twin's round-trip row: a release store of ping = the next value, then acquire loads
 * until pong is that value; fails when the kernel gave up, or after ROUND_TRIP_PATIENCE_NS without
 * the pong (the clock read once every POLLS_PER_CLOCK_READ polls, as the Java twin reads it).
 */
static void ping_until_pong(long i) {
    (void) i;
    uint32_t v = ++written;
    __atomic_store_n((volatile uint32_t *) ping, v, __ATOMIC_RELEASE);
    unsigned polls = 0;
    long long deadline = 0;
    uint32_t seen;
    while ((seen = __atomic_load_n((volatile uint32_t *) pong, __ATOMIC_ACQUIRE)) != v) {
        if (seen == (uint32_t) GAVE_UP) {
            fprintf(stderr, "the ping-pong kernel gave up waiting for ping %u; the host was too slow (or stopped) "
                    "between two pings: run the row again on an idle machine\n", v);
            exit(1);
        }
        if ((++polls & (POLLS_PER_CLOCK_READ - 1)) == 0) {
            long long now = now_ns();
            if (polls == POLLS_PER_CLOCK_READ) {
                deadline = now + ROUND_TRIP_PATIENCE_NS;
            } else if (now - deadline > 0) {
                fprintf(stderr, "no pong %u within 5000 ms (pong is %d): the ping-pong kernel is not running or its "
                        "writes do not reach the host; check that no other process holds the GPU\n", v, (int) seen);
                exit(1);
            }
        }
#if defined(__x86_64__)
        __builtin_ia32_pause(); /* as Thread.onSpinWait */
#endif
    }
}

static void alloc_free(long i) {
    (void) i;
    CUdeviceptr d;
    CHECK(cuMemAlloc(&d, ALLOCATION_BYTES));
    CHECK(cuMemFree(d));
}

static void alloc_free_async(long i) {
    (void) i;
    CUdeviceptr d;
    CHECK(cuMemAllocAsync(&d, ALLOCATION_BYTES, stream));
    CHECK(cuMemFreeAsync(d, stream));
}

static void alloc_free_from_pool(long i) {
    (void) i;
    CUdeviceptr d;
    CHECK(cuMemAllocFromPoolAsync(&d, ALLOCATION_BYTES, pool, stream));
    CHECK(cuMemFreeAsync(d, stream));
}

/*
 * The batched-copy rows (issue 24): each operation moves COPIES chunks of COPY_BYTES between one
 * of COPY_BUFFERS pinned buffers (in turn) and one device buffer, as Gatun's CopyBatch does: fill
 * the three arrays, queue the copies (one cuMemcpyBatchAsync, or one cuMemcpyAsync each), record
 * the buffer's fence. No wait for the buffer's previous fence: it was recorded on the same
 * stream, whose order puts these copies after it (issue 36 §3: Gatun no longer waits either).
 */
static void *copy_pinned[COPY_BUFFERS];
static CUevent copy_fence[COPY_BUFFERS];
static CUdeviceptr copy_dsts[COPIES], copy_srcs[COPIES];
static size_t copy_sizes[COPIES];

static void set_up_copies(void) {
    for (int b = 0; b < COPY_BUFFERS; b++) {
        CHECK(cuMemHostAlloc(&copy_pinned[b], (size_t) COPIES * COPY_BYTES, CU_MEMHOSTALLOC_PORTABLE));
        memset(copy_pinned[b], 7, (size_t) COPIES * COPY_BYTES);
        CHECK(cuEventCreate(&copy_fence[b], CU_EVENT_DISABLE_TIMING));
    }
    CHECK(cuMemAlloc(&device_buf, (size_t) COPIES * COPY_BYTES));
    CHECK(cuMemsetD8Async(device_buf, 7, (size_t) COPIES * COPY_BYTES, stream));
}

/* Fills the arrays: chunk k of buffer b to or from chunk k of the device. */
static void copy_prepare(int b, int to_device) {
    for (int k = 0; k < COPIES; k++) {
        CUdeviceptr host = (CUdeviceptr) (uintptr_t) copy_pinned[b] + (CUdeviceptr) k * COPY_BYTES;
        CUdeviceptr dev = device_buf + (CUdeviceptr) k * COPY_BYTES;
        copy_dsts[k] = to_device ? dev : host;
        copy_srcs[k] = to_device ? host : dev;
        copy_sizes[k] = COPY_BYTES;
    }
}

static void copy_fence_after(int b) {
    CHECK(cuEventRecord(copy_fence[b], stream));
}

static void copy_each(long i, int to_device) {
    int b = (int) (i % COPY_BUFFERS);
    copy_prepare(b, to_device);
    for (int k = 0; k < COPIES; k++) {
        CHECK(cuMemcpyAsync(copy_dsts[k], copy_srcs[k], copy_sizes[k], stream));
    }
    copy_fence_after(b);
}

/* CUDA 13.0's cuMemcpyBatchAsync (the symbol cuMemcpyBatchAsync_v2): build with the 13.0 headers. */
static void copy_batch(long i, int to_device) {
    int b = (int) (i % COPY_BUFFERS);
    copy_prepare(b, to_device);
    CUmemcpyAttributes attributes;
    memset(&attributes, 0, sizeof attributes);
    attributes.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    size_t first = 0;
    CHECK(cuMemcpyBatchAsync(copy_dsts, copy_srcs, copy_sizes, COPIES, &attributes, &first, 1, stream));
    copy_fence_after(b);
}

static void copy_each_h2d(long i) { copy_each(i, 1); }
static void copy_batch_h2d(long i) { copy_batch(i, 1); }
static void copy_each_d2h(long i) { copy_each(i, 0); }
static void copy_batch_d2h(long i) { copy_batch(i, 0); }

/* A pool on device 0 that keeps what is freed, as the Java twin creates it. */
static void set_up_pool(void) {
    CUmemPoolProps props = {0};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    CHECK(cuMemPoolCreate(&pool, &props));
    cuuint64_t keep_all = UINT64_MAX;
    CHECK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep_all));
}

/* A graph of `kernels` empty launches, captured thread-locally as the Java twin captures its own. */
static void capture(int kernels) {
    CUgraph g;
    CHECK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    for (int k = 0; k < kernels; k++) {
        CHECK(cuLaunchKernel(empty_fn, 1, 1, 1, 32, 1, 1, 0, stream, NULL, NULL));
    }
    CHECK(cuStreamEndCapture(stream, &g));
    CHECK(cuGraphInstantiate(&graph, g, 0));
    CHECK(cuGraphDestroy(g));
}

static void set_up_graph_1(void) { capture(1); }
static void set_up_graph_10(void) { capture(10); }
static void set_up_event(void) { CHECK(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING)); }

/* Pinned memory as Gatun allocates it: portable, not write-combined. */
static void set_up_transfer(void) {
    CHECK(cuMemHostAlloc(&pinned, TRANSFER_BYTES, CU_MEMHOSTALLOC_PORTABLE));
    CHECK(cuMemAlloc(&device_buf, TRANSFER_BYTES));
}

static void set_up_word(void) {
    CHECK(cuMemAlloc(&word, sizeof(int)));
    CHECK(cuMemsetD32Async(word, READBACK_VALUE, 1, stream));
}

/* A mapped word as Gatun allocates it: DEVICEMAP | PORTABLE, cleared. */
static void alloc_mapped(void **host, CUdeviceptr *device) {
    CHECK(cuMemHostAlloc(host, 8, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    CHECK(cuMemHostGetDevicePointer(device, *host, 0));
    memset(*host, 0, 8);
}

static void set_up_mapped(void) { alloc_mapped(&mapped, &mapped_device); }

/* Two mapped words, then the kernel launched once, on its own stream, for every operation of the run. */
static void set_up_round_trip(void) {
    alloc_mapped(&ping, &ping_device);
    alloc_mapped(&pong, &pong_device);
    CHECK(cuStreamCreate(&answering, CU_STREAM_NON_BLOCKING));
    CHECK(cuModuleGetFunction(&pingpong_fn, module, "pingpong"));
    int n = (int) operations;
    void *args[] = {&ping_device, &pong_device, &n};
    CHECK(cuLaunchKernel(pingpong_fn, 1, 1, 1, 1, 1, 1, 0, answering, args, NULL));
}

/*
 * The GEMM rows (issue 38): a 64x64x64 fp16 GEMM (fp16 D, fp32 accumulation, alpha 1, beta 0, D
 * also C) made exactly as Gatun's warm Matmul.run and Gemm.run make it, every handle, descriptor,
 * algorithm and binding made once before the loop: in the loop, only cublasLtMatmul, or only
 * cublasGemmEx. The libraries are opened here, with dlopen, by these rows alone.
 */
#if defined(__has_include)
#if __has_include(<cublasLt.h>)
#include <cublasLt.h> /* and cublas_api.h, which it includes */
#define HAVE_CUBLAS 1
#endif
#endif

static CUdeviceptr gemm_a, gemm_b, gemm_d, gemm_workspace;
static int blas_handles; /* whether the row made cuBLAS or cuBLASLt objects, to destroy at its end */
/* Why cuBLAS could not be loaded (empty: loaded, or not tried). */
static char blas_missing[1024];

#ifdef HAVE_CUBLAS
/*
 * The functions, looked up once per process (dlsym); each pointer has its header's exact type, so
 * every call below is checked against cuBLAS's own prototype. The libraries stay loaded.
 */
static struct {
    int loaded;
    __typeof__(&cublasLtGetStatusName) lt_status_name;
    __typeof__(&cublasLtCreate) lt_create;
    __typeof__(&cublasLtDestroy) lt_destroy;
    __typeof__(&cublasLtMatmulDescCreate) desc_create;
    __typeof__(&cublasLtMatmulDescDestroy) desc_destroy;
    __typeof__(&cublasLtMatmulDescSetAttribute) desc_set;
    __typeof__(&cublasLtMatrixLayoutCreate) layout_create;
    __typeof__(&cublasLtMatrixLayoutDestroy) layout_destroy;
    __typeof__(&cublasLtMatmulPreferenceCreate) preference_create;
    __typeof__(&cublasLtMatmulPreferenceDestroy) preference_destroy;
    __typeof__(&cublasLtMatmulPreferenceSetAttribute) preference_set;
    __typeof__(&cublasLtMatmulAlgoGetHeuristic) heuristic;
    __typeof__(&cublasLtMatmul) matmul;
    __typeof__(&cublasCreate_v2) create;
    __typeof__(&cublasDestroy_v2) destroy;
    __typeof__(&cublasSetStream_v2) set_stream;
    __typeof__(&cublasSetWorkspace_v2) set_workspace;
    __typeof__(&cublasGemmEx) gemm_ex;
} blas;

#define BLAS_CHECK(call) do { cublasStatus_t s_ = (call); if (s_ != CUBLAS_STATUS_SUCCESS) blas_fail(#call, s_, __LINE__); } while (0)

static void blas_fail(const char *call, cublasStatus_t status, int line) {
    fprintf(stderr, "twins.c:%d: %s failed: %s (%d)\n", line, call, blas.lt_status_name(status), (int) status);
    exit(1);
}

/*
 * Opens `soname` as Gatun's search does: the copy this process already mapped (Gatun's, when the
 * Java twin ran first), else $CUDA_HOME/lib64, /usr/local/cuda/lib64, the toolkit's target
 * directory, then the dynamic loader's search. NULL, with every attempt in blas_missing, when none opens.
 */
static void *open_library(const char *soname) {
    void *library = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
    if (library != NULL) {
        return library;
    }
    const char *home = getenv("CUDA_HOME");
    const char *directories[] = {home != NULL && *home != '\0' ? home : "/usr/local/cuda", "/usr/local/cuda",
        "/usr/local/cuda/targets/x86_64-linux"};
    char path[512];
    for (size_t d = 0; d < sizeof directories / sizeof directories[0]; d++) {
        snprintf(path, sizeof path, "%s/%s/%s", directories[d], d == 2 ? "lib" : "lib64", soname);
        if ((library = dlopen(path, RTLD_NOW | RTLD_LOCAL)) != NULL) {
            return library;
        }
    }
    if ((library = dlopen(soname, RTLD_NOW | RTLD_LOCAL)) != NULL) {
        return library;
    }
    const char *why = dlerror();
    snprintf(blas_missing, sizeof blas_missing, "%s not found in %s/lib64, /usr/local/cuda/lib64, "
            "/usr/local/cuda/targets/x86_64-linux/lib or the loader's path (%s)", soname, directories[0],
            why != NULL ? why : "no reason given");
    return NULL;
}

/* dlsym into a typed pointer; records the first missing symbol in blas_missing. */
#define FIND(library, field, symbol) \
    do { \
        *(void **) &blas.field = dlsym(library, symbol); \
        if (blas.field == NULL && blas_missing[0] == '\0') { \
            snprintf(blas_missing, sizeof blas_missing, "%s lacks %s: not cuBLAS 13", #library, symbol); \
        } \
    } while (0)

/* cuBLASLt, then cuBLAS (which imports it), as Gatun loads them; 1 when both are usable. */
static int load_blas(void) {
    if (blas.loaded != 0) {
        return blas.loaded > 0;
    }
    blas.loaded = -1;
    void *lt = open_library("libcublasLt.so.13");
    void *cublas = lt != NULL ? open_library("libcublas.so.13") : NULL;
    if (cublas == NULL) {
        return 0;
    }
    FIND(lt, lt_status_name, "cublasLtGetStatusName");
    FIND(lt, lt_create, "cublasLtCreate");
    FIND(lt, lt_destroy, "cublasLtDestroy");
    FIND(lt, desc_create, "cublasLtMatmulDescCreate");
    FIND(lt, desc_destroy, "cublasLtMatmulDescDestroy");
    FIND(lt, desc_set, "cublasLtMatmulDescSetAttribute");
    FIND(lt, layout_create, "cublasLtMatrixLayoutCreate");
    FIND(lt, layout_destroy, "cublasLtMatrixLayoutDestroy");
    FIND(lt, preference_create, "cublasLtMatmulPreferenceCreate");
    FIND(lt, preference_destroy, "cublasLtMatmulPreferenceDestroy");
    FIND(lt, preference_set, "cublasLtMatmulPreferenceSetAttribute");
    FIND(lt, heuristic, "cublasLtMatmulAlgoGetHeuristic");
    FIND(lt, matmul, "cublasLtMatmul");
    FIND(cublas, create, "cublasCreate_v2");
    FIND(cublas, destroy, "cublasDestroy_v2");
    FIND(cublas, set_stream, "cublasSetStream_v2");
    FIND(cublas, set_workspace, "cublasSetWorkspace_v2");
    FIND(cublas, gemm_ex, "cublasGemmEx");
    if (blas_missing[0] != '\0') {
        return 0;
    }
    blas.loaded = 1;
    return 1;
}

static cublasLtHandle_t lt_handle;
static cublasLtMatmulDesc_t lt_desc;
static cublasLtMatrixLayout_t lt_layout_a, lt_layout_b, lt_layout_d;
static cublasLtMatmulAlgo_t lt_algo;
static cublasHandle_t cublas_handle;
/* Host scalars of the compute type's scale type (fp32), as Gatun passes them. */
static const float gemm_alpha = 1.0f, gemm_beta = 0.0f;
/* The device addresses as the libraries take them. */
static void *gemm_a_ptr, *gemm_b_ptr, *gemm_d_ptr, *gemm_workspace_ptr;

/* The operands, as the Java twin makes them: A and B all 1.0, D poisoned with NaN; the workspace. */
static void set_up_gemm_operands(void) {
    size_t elements = (size_t) GEMM_SIZE * GEMM_SIZE;
    CHECK(cuMemAlloc(&gemm_a, elements * 2));
    CHECK(cuMemAlloc(&gemm_b, elements * 2));
    CHECK(cuMemAlloc(&gemm_d, elements * 2));
    CHECK(cuMemAlloc(&gemm_workspace, GEMM_WORKSPACE_BYTES));
    CHECK(cuMemsetD16Async(gemm_a, HALF_ONE, elements, stream));
    CHECK(cuMemsetD16Async(gemm_b, HALF_ONE, elements, stream));
    CHECK(cuMemsetD16Async(gemm_d, HALF_NAN, elements, stream));
    gemm_a_ptr = (void *) (uintptr_t) gemm_a;
    gemm_b_ptr = (void *) (uintptr_t) gemm_b;
    gemm_d_ptr = (void *) (uintptr_t) gemm_d;
    gemm_workspace_ptr = (void *) (uintptr_t) gemm_workspace;
    blas_handles = 1;
}

static cublasLtMatrixLayout_t gemm_layout(void) {
    cublasLtMatrixLayout_t layout;
    BLAS_CHECK(blas.layout_create(&layout, CUDA_R_16F, GEMM_SIZE, GEMM_SIZE, GEMM_SIZE));
    return layout;
}

/*
 * As Gatun's Matmul prepares it: the descriptor (fp32 compute and scale, no transposes, the
 * default epilogue), one layout per operand, and the heuristic's first algorithm for the 32 MiB
 * workspace and operands aligned to 16 bytes, asked once.
 */
static void set_up_gemm_lt(void) {
    set_up_gemm_operands();
    BLAS_CHECK(blas.lt_create(&lt_handle));
    BLAS_CHECK(blas.desc_create(&lt_desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    int32_t no_transpose = CUBLAS_OP_N, epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    BLAS_CHECK(blas.desc_set(lt_desc, CUBLASLT_MATMUL_DESC_TRANSA, &no_transpose, sizeof no_transpose));
    BLAS_CHECK(blas.desc_set(lt_desc, CUBLASLT_MATMUL_DESC_TRANSB, &no_transpose, sizeof no_transpose));
    BLAS_CHECK(blas.desc_set(lt_desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
    lt_layout_a = gemm_layout();
    lt_layout_b = gemm_layout();
    lt_layout_d = gemm_layout();
    cublasLtMatmulPreference_t preference;
    BLAS_CHECK(blas.preference_create(&preference));
    uint64_t workspace_bytes = GEMM_WORKSPACE_BYTES;
    BLAS_CHECK(blas.preference_set(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
            sizeof workspace_bytes));
    uint32_t alignment = 16;
    cublasLtMatmulPreferenceAttributes_t aligned[] = {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (size_t k = 0; k < sizeof aligned / sizeof aligned[0]; k++) {
        BLAS_CHECK(blas.preference_set(preference, aligned[k], &alignment, sizeof alignment));
    }
    cublasLtMatmulHeuristicResult_t result;
    int found = 0;
    BLAS_CHECK(blas.heuristic(lt_handle, lt_desc, lt_layout_a, lt_layout_b, lt_layout_d, lt_layout_d, preference, 1,
            &result, &found));
    BLAS_CHECK(blas.preference_destroy(preference));
    if (found == 0) {
        fprintf(stderr, "cuBLASLt has no algorithm for a %d^3 fp16 matmul\n", GEMM_SIZE);
        exit(1);
    }
    lt_algo = result.algo;
}

/* As a warm Gatun Gemm finds it: the context's handle bound to this stream and workspace once. */
static void set_up_gemm(void) {
    set_up_gemm_operands();
    BLAS_CHECK(blas.create(&cublas_handle));
    BLAS_CHECK(blas.set_stream(cublas_handle, stream));
    /* After the stream: cublasSetStream resets the handle's workspace to cuBLAS's own. */
    BLAS_CHECK(blas.set_workspace(cublas_handle, gemm_workspace_ptr, GEMM_WORKSPACE_BYTES));
}

static void gemm_lt(long i) {
    (void) i;
    BLAS_CHECK(blas.matmul(lt_handle, lt_desc, &gemm_alpha, gemm_a_ptr, lt_layout_a, gemm_b_ptr, lt_layout_b,
            &gemm_beta, gemm_d_ptr, lt_layout_d, gemm_d_ptr, lt_layout_d, &lt_algo, gemm_workspace_ptr,
            GEMM_WORKSPACE_BYTES, stream));
}

static void gemm(long i) {
    (void) i;
    BLAS_CHECK(blas.gemm_ex(cublas_handle, CUBLAS_OP_N, CUBLAS_OP_N, GEMM_SIZE, GEMM_SIZE, GEMM_SIZE, &gemm_alpha,
            gemm_a_ptr, CUDA_R_16F, GEMM_SIZE, gemm_b_ptr, CUDA_R_16F, GEMM_SIZE, &gemm_beta, gemm_d_ptr, CUDA_R_16F,
            GEMM_SIZE, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

/* Destroys what set_up_gemm_lt or set_up_gemm made (after the stream drained), each global back to NULL. */
static void tear_down_blas(void) {
    if (lt_handle != NULL) {
        BLAS_CHECK(blas.layout_destroy(lt_layout_a));
        BLAS_CHECK(blas.layout_destroy(lt_layout_b));
        BLAS_CHECK(blas.layout_destroy(lt_layout_d));
        BLAS_CHECK(blas.desc_destroy(lt_desc));
        BLAS_CHECK(blas.lt_destroy(lt_handle));
        lt_layout_a = lt_layout_b = lt_layout_d = NULL;
        lt_desc = NULL;
        lt_handle = NULL;
    }
    if (cublas_handle != NULL) {
        BLAS_CHECK(blas.destroy(cublas_handle));
        cublas_handle = NULL;
    }
}
#else
/* Built without cuBLAS's headers: the GEMM rows are reported as not run. */
static int load_blas(void) {
    snprintf(blas_missing, sizeof blas_missing, "twins.c was built without cublasLt.h (not in the include path; "
            "set CUDA_HOME to a toolkit with cuBLAS)");
    return 0;
}

static void set_up_gemm_lt(void) {
}

static void set_up_gemm(void) {
}

static void gemm_lt(long i) {
    (void) i;
}

static void gemm(long i) {
    (void) i;
}

static void tear_down_blas(void) {
}
#endif

/* Every element of D is 64.0 after the GEMMs: each wrote all of it (a NaN left means one did not). */
static int gemm_product_ok(void) {
    static uint16_t d[GEMM_SIZE * GEMM_SIZE];
    CHECK(cuMemcpyDtoH(d, gemm_d, sizeof d));
    for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
        if (d[i] != HALF_PRODUCT) {
            fprintf(stderr, "D[%zu] is fp16 0x%04x after the GEMMs, not 0x%04x (64.0)\n", i, d[i], HALF_PRODUCT);
            return 0;
        }
    }
    return 1;
}

struct row {
    const char *id;
    void (*set_up)(void); /* NULL: the common set-up is enough */
    void (*op)(long);
    int batched;
};

/* The ids of dev.gatun.cuda.bench.TwinRow; prepare_four has no C counterpart. */
static const struct row rows[] = {
    {"launch_empty", NULL, launch_empty, 0},
    {"launch_four_prepared", NULL, launch_four, 0},
    {"launch_four_setters", NULL, launch_four_set, 0},
    {"launch_sync", NULL, launch_sync, 0},
    {"replay_1", set_up_graph_1, replay, 0},
    {"replay_10", set_up_graph_10, replay, 0},
    {"event_record_query", set_up_event, record_query, 0},
    {"upload_256m", set_up_transfer, upload, 0},
    {"download_256m", set_up_transfer, download, 0},
    {"readback_4b", set_up_word, read_word, 0},
    {"alloc_pooled", NULL, alloc_free, 0},
    {"alloc_unpooled", NULL, alloc_free, 0},
    {"alloc_stream_ordered", NULL, alloc_free_async, 0},
    {"alloc_from_pool", set_up_pool, alloc_free_from_pool, 0},
    {"issue_launch", NULL, launch_empty, 1},
    {"issue_replay", set_up_graph_1, replay, 1},
    {"issue_event_record", set_up_event, record, 1},
    {"mapped_word_seen", set_up_mapped, write_mapped_until_seen, 0},
    {"mapped_word_round_trip", set_up_round_trip, ping_until_pong, 0},
    {"copy_each_h2d_64x4k", set_up_copies, copy_each_h2d, 0},
    {"copy_batch_h2d_64x4k", set_up_copies, copy_batch_h2d, 0},
    {"copy_each_d2h_64x4k", set_up_copies, copy_each_d2h, 0},
    {"copy_batch_d2h_64x4k", set_up_copies, copy_batch_d2h, 0},
    {"gemm_lt_64", set_up_gemm_lt, gemm_lt, 1},
    {"gemm_64", set_up_gemm, gemm, 1},
};

/* Whether the row calls cuBLAS (opened only for these rows). */
static int needs_blas(const struct row *row) {
    return row->op == gemm_lt || row->op == gemm;
}

static long long now_ns(void) {
    struct timespec t;
    if (clock_gettime(CLOCK_MONOTONIC, &t) != 0) {
        perror("clock_gettime");
        exit(1);
    }
    return (long long) t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void loop(void (*op)(long), long from, long to) {
    for (long i = from; i < to; i++) {
        op(i);
    }
}

static long long time_plain(void (*op)(long), long n) {
    loop(op, 0, n / 2);
    CHECK(cuStreamSynchronize(stream));
    long long start = now_ns();
    loop(op, 0, n);
    CHECK(cuStreamSynchronize(stream));
    return now_ns() - start;
}

static long long time_batches(void (*op)(long), long n) {
    for (long i = 0; i + BATCH <= n / 2; i += BATCH) {
        CHECK(cuStreamSynchronize(stream));
        loop(op, i, i + BATCH);
    }
    long long total = 0;
    for (long i = 0; i < n; i += BATCH) {
        CHECK(cuStreamSynchronize(stream)); /* outside the timing: the batch starts on an idle queue */
        long long start = now_ns();
        loop(op, i, i + BATCH);
        total += now_ns() - start;
    }
    CHECK(cuStreamSynchronize(stream));
    return total;
}

/* The PTX text, NUL-terminated as cuModuleLoadData reads it. */
static char *read_ptx(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "cannot open %s: %s\n", path, strerror(errno));
        exit(2);
    }
    size_t size = 0, capacity = 1 << 16;
    char *text = malloc(capacity);
    size_t got;
    while (text != NULL && (got = fread(text + size, 1, capacity - size - 1, f)) > 0) {
        size += got;
        if (size + 1 == capacity) {
            capacity *= 2;
            text = realloc(text, capacity);
        }
    }
    if (text == NULL || ferror(f)) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(2);
    }
    fclose(f);
    text[size] = '\0';
    return text;
}

static float first_output(void) {
    float first;
    CHECK(cuMemcpyDtoH(&first, out_buf, sizeof first));
    return first;
}

static int usage(const char *self) {
    fprintf(stderr, "usage: %s ROW N PTX_FILE\nrows:", self);
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        fprintf(stderr, " %s", rows[r].id);
    }
    fprintf(stderr, "\n");
    return 2;
}

static const struct row *find_row(const char *id) {
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        if (strcmp(rows[r].id, id) == 0) {
            return &rows[r];
        }
    }
    return NULL;
}

/*
 * One run of one row: the set-up, N timed operations, the row's check and a tear-down that
 * leaves nothing behind (every global back to its initial value), so that a process can run
 * rows one after the other (gatun_twin_run). Stores the timed wall time in *total; returns 0,
 * or 1 when the check failed (with a line on stderr).
 */
static int run_row(const struct row *row, long n, const char *ptx, long long *total) {
    if (needs_blas(row) && !load_blas()) {
        fprintf(stderr, "%s not run: cuBLAS missing: %s\n", row->id, blas_missing);
        return SKIPPED;
    }
    CUdevice device;
    CUcontext context;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&device, 0));
    CHECK(cuDevicePrimaryCtxRetain(&context, device));
    CHECK(cuCtxSetCurrent(context));
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CHECK(cuModuleLoadData(&module, ptx));
    CHECK(cuModuleGetFunction(&empty_fn, module, "empty"));
    CHECK(cuModuleGetFunction(&four_fn, module, "four"));
    CHECK(cuMemAlloc(&in_buf, FOUR_ELEMENTS * sizeof(float)));
    CHECK(cuMemAlloc(&out_buf, FOUR_ELEMENTS * sizeof(float)));
    CHECK(cuMemsetD32Async(in_buf, ONE_BITS, FOUR_ELEMENTS, stream));
    CHECK(cuMemsetD32Async(out_buf, NAN_BITS, FOUR_ELEMENTS, stream));
    arg_out = out_buf;
    arg_n = FOUR_ELEMENTS;
    arg_a = 1.0f;
    arg_in = in_buf;
    readback = 0;
    /* Every operation of the run: the warm-up of time_plain or time_batches, then n. */
    operations = (row->batched ? n / 2 / BATCH * BATCH : n / 2) + n;
    if (row->set_up != NULL) {
        row->set_up();
    }
    CHECK(cuStreamSynchronize(stream));

    *total = row->batched ? time_batches(row->op, n) : time_plain(row->op, n);

    /* As the Java twin, check that the operations did what the row claims. */
    int status = 0;
    if (row->op == launch_four && first_output() != 1.0f) {
        fprintf(stderr, "out[0] is %g after the 4-argument launches, not 1\n", first_output());
        status = 1;
    }
    if (row->op == launch_four_set && first_output() != (float) (n - 1)) {
        fprintf(stderr, "out[0] is %g after the 4-argument launches, not %ld\n", first_output(), n - 1);
        status = 1;
    }
    if (row->op == read_word && readback != READBACK_VALUE) {
        fprintf(stderr, "the readback read %d, not %d\n", readback, READBACK_VALUE);
        status = 1;
    }

    if (row->op == write_mapped_until_seen
            && (written != (uint32_t) (n + n / 2) || *(volatile uint32_t *) mapped != written)) {
        fprintf(stderr, "the host saw %u after %u writes, not %ld\n", *(volatile uint32_t *) mapped, written, n + n / 2);
        status = 1;
    }

    if (row->op == ping_until_pong
            && (written != (uint32_t) operations || *(volatile uint32_t *) pong != written)) {
        fprintf(stderr, "pong is %d after %u pings, not %ld\n", *(volatile int32_t *) pong, written, operations);
        status = 1;
    }

    if (needs_blas(row) && !gemm_product_ok()) {
        status = 1;
    }

    if (answering != NULL) {
        /* The kernel holds the words' addresses: they are freed only after it has returned. */
        CHECK(cuStreamSynchronize(answering));
        CHECK(cuStreamDestroy(answering));
        answering = NULL;
        pingpong_fn = NULL;
        CHECK(cuMemFreeHost(ping));
        CHECK(cuMemFreeHost(pong));
        ping = pong = NULL;
        ping_device = pong_device = 0;
        written = 0;
    }
    if (graph != NULL) {
        CHECK(cuGraphExecDestroy(graph));
        graph = NULL;
    }
    if (event != NULL) {
        CHECK(cuEventDestroy(event));
        event = NULL;
    }
    if (pool != NULL) {
        CHECK(cuStreamSynchronize(stream)); /* every free into it has run */
        CHECK(cuMemPoolDestroy(pool));
        pool = NULL;
    }
    if (pinned != NULL) {
        CHECK(cuMemFreeHost(pinned));
        pinned = NULL;
    }
    CHECK(cuStreamSynchronize(stream));
    if (blas_handles) {
        tear_down_blas(); /* before the workspace is freed below: cuBLAS's handle names it */
        blas_handles = 0;
    }
    if (mapped != NULL) {
        CHECK(cuMemFreeHost(mapped));
        mapped = NULL;
        mapped_device = 0;
        written = 0;
    }
    for (int b = 0; b < COPY_BUFFERS; b++) {
        if (copy_fence[b] != NULL) {
            CHECK(cuEventDestroy(copy_fence[b]));
            copy_fence[b] = NULL;
        }
        if (copy_pinned[b] != NULL) {
            CHECK(cuMemFreeHost(copy_pinned[b]));
            copy_pinned[b] = NULL;
        }
    }
    CUdeviceptr *buffers[] = {&in_buf, &out_buf, &device_buf, &word, &gemm_a, &gemm_b, &gemm_d, &gemm_workspace};
    for (size_t b = 0; b < sizeof buffers / sizeof buffers[0]; b++) {
        if (*buffers[b] != 0) {
            CHECK(cuMemFree(*buffers[b]));
            *buffers[b] = 0;
        }
    }
    CHECK(cuModuleUnload(module));
    module = NULL;
    CHECK(cuStreamDestroy(stream));
    stream = NULL;
    CHECK(cuDevicePrimaryCtxRelease(device));
    return status;
}

/*
 * The C twin inside another process (built with -shared -fPIC and loaded by the Java twin's
 * SameProcess runner): runs row `id` N times on PTX text `ptx` (NUL-terminated) and returns the
 * timed wall time in nanoseconds; -1 for an unknown row or a bad N, -2 when the row's check
 * failed, -3 when the row needs cuBLAS and it could not be loaded (the reason on stderr). A failed driver call still ends the process, with its line on stderr, as in main.
 * Running both twins in one process puts them on the same driver and machine state, which
 * differs from one process start to the next.
 */
long long gatun_twin_run(const char *id, long n, const char *ptx) {
    const struct row *row = find_row(id);
    if (row == NULL || n <= 0 || (row->batched && n % BATCH != 0)) {
        return -1;
    }
    long long total;
    int status = run_row(row, n, ptx, &total);
    return status == 0 ? total : status == SKIPPED ? -3 : -2;
}

/*
 * The floor's split (dev.gatun.cuda.bench.BareDowncalls, -Dgatun.bench.bareVia): the event and
 * stream-ordered rows' operations made by C on the handles of the Java bare twin's session,
 * either one operation per call from Java (the _step entries: one downcall into this library,
 * the driver called from C) or n operations per call (the _loop entries: C's own loop on Java's
 * stream and event). Each returns 0 or the first CUresult that is an error (CUDA_ERROR_NOT_READY
 * from the query is not). Between the bare twin (every driver call a downcall from a Java loop)
 * and the C twin (C's loop on C's handles), they say whether the in-process gap is the Java-to-C
 * call, the Java loop around it, or the handles.
 */
int gatun_twin_record_query_step(CUevent e, CUstream s) {
    CUresult r = cuEventRecord(e, s);
    if (r != CUDA_SUCCESS) {
        return (int) r;
    }
    r = cuEventQuery(e);
    return r == CUDA_ERROR_NOT_READY ? 0 : (int) r;
}

int gatun_twin_record_query_loop(CUevent e, CUstream s, long n) {
    for (long i = 0; i < n; i++) {
        int r = gatun_twin_record_query_step(e, s);
        if (r != 0) {
            return r;
        }
    }
    return 0;
}

int gatun_twin_alloc_free_step(CUstream s) {
    CUdeviceptr d;
    CUresult r = cuMemAllocAsync(&d, ALLOCATION_BYTES, s);
    return r != CUDA_SUCCESS ? (int) r : (int) cuMemFreeAsync(d, s);
}

int gatun_twin_alloc_free_loop(CUstream s, long n) {
    for (long i = 0; i < n; i++) {
        int r = gatun_twin_alloc_free_step(s);
        if (r != 0) {
            return r;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        return usage(argv[0]);
    }
    const struct row *row = find_row(argv[1]);
    if (row == NULL) {
        fprintf(stderr, "%s: no C twin for row '%s'\n", argv[0], argv[1]);
        return usage(argv[0]);
    }
    char *end;
    errno = 0;
    long n = strtol(argv[2], &end, 10);
    if (*end != '\0' || errno != 0 || n <= 0 || n > 1000000000L || (row->batched && n % BATCH != 0)) {
        fprintf(stderr, "%s: N is '%s'; give a positive number%s\n", argv[0], argv[2],
                row->batched ? ", a multiple of 64 for a host-issue row" : "");
        return usage(argv[0]);
    }
    char *ptx = read_ptx(argv[3]);
    long long total;
    int status = run_row(row, n, ptx, &total);
    if (status == 0) {
        printf("TWIN c %s %ld %lld -\n", row->id, n, total);
    } else if (status == SKIPPED) {
        printf("SKIP c %s cuBLAS missing: %s\n", row->id, blas_missing);
        status = 0;
    }
    free(ptx);
    return status;
}
