/*
 * Does compute-sanitizer's initcheck survive stream-ordered allocation from many threads and
 * several contexts, with the driver API alone?
 *
 * Under `./sanitize initcheck`, the JVM running VirtualThreadsGpuTest died inside libcuda, in
 * initcheck's interception of cuMemAllocAsync (src-test-gpu/README.md; the test now carries the
 * tag `breaks-initcheck`). That test runs many virtual threads, which move between carrier (OS)
 * threads, on the primary context and two green contexts of one device; each operation makes its
 * context current on the carrier it runs on. This probe does the same with pthreads and no JVM,
 * one variant per process, so each sanitizer run's verdict belongs to one variant:
 *
 *   one_thread      1 thread, the primary context only
 *   one_thread_green  1 thread; each batch makes one of three contexts current (the primary,
 *                   two green contexts)
 *   threads         THREADS threads, the primary context only, a stream each
 *   threads_green   THREADS threads; each batch of 16 makes one of three contexts current (the
 *                   primary, two green contexts), as a carrier does for the virtual threads it runs
 *
 * Each iteration: cuMemAllocAsync (4 KiB to 1 MiB), cuMemsetD32Async of a pattern, a 4-byte
 * cuMemcpyDtoHAsync of the last word into pinned memory, cuMemFreeAsync; every 16 iterations the
 * stream is synchronized and every read word checked against its pattern. Exit status: 0 when
 * every word read back was right, 1 when one was wrong, 2 on any CUDA error (named), 64 on a
 * usage error. Build and run: probes/initcheck-alloc-async.
 */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                              \
    do {                                                                                         \
        CUresult r_ = (call);                                                                    \
        if (r_ != CUDA_SUCCESS) {                                                                \
            const char *name_ = "unknown";                                                       \
            cuGetErrorName(r_, &name_);                                                          \
            fprintf(stderr, "probe: %s failed: %s (%d), line %d\n", #call, name_, (int) r_, __LINE__); \
            exit(2);                                                                             \
        }                                                                                        \
    } while (0)

enum { CONTEXTS = 3, ITERATIONS = 400, BATCH = 16 };

static CUcontext contexts[CONTEXTS];
static CUgreenCtx greens[CONTEXTS - 1];
static int context_count = 1;
static int mismatches_total = 0;
static pthread_mutex_t total_lock = PTHREAD_MUTEX_INITIALIZER;

static void make_green_contexts(CUdevice dev) {
    CUdevResource sm, groups[CONTEXTS - 1], remaining;
    unsigned int count = CONTEXTS - 1;
    CHECK(cuDeviceGetDevResource(dev, &sm, CU_DEV_RESOURCE_TYPE_SM));
    CHECK(cuDevSmResourceSplitByCount(groups, &count, &sm, &remaining, 0, 8));
    if (count < CONTEXTS - 1) {
        fprintf(stderr, "probe: the device split into %u SM groups, not %d\n", count, CONTEXTS - 1);
        exit(2);
    }
    for (int i = 0; i < CONTEXTS - 1; i++) {
        CUdevResourceDesc desc;
        CHECK(cuDevResourceGenerateDesc(&desc, &groups[i], 1));
        CHECK(cuGreenCtxCreate(&greens[i], desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
        CHECK(cuCtxFromGreenCtx(&contexts[i + 1], greens[i]));
    }
    context_count = CONTEXTS;
}

static void *worker(void *arg) {
    long id = (long) arg;
    CUstream streams[CONTEXTS];
    unsigned int *words;
    CHECK(cuCtxSetCurrent(contexts[0]));
    CHECK(cuMemHostAlloc((void **) &words, BATCH * sizeof(unsigned int), 0));
    for (int c = 0; c < context_count; c++) {
        CHECK(cuCtxSetCurrent(contexts[c]));
        if (c == 0) {
            CHECK(cuStreamCreate(&streams[c], CU_STREAM_NON_BLOCKING));
        } else {
            CHECK(cuGreenCtxStreamCreate(&streams[c], greens[c - 1], CU_STREAM_NON_BLOCKING, 0));
        }
    }
    int mismatches = 0;
    for (int batch = 0; batch < ITERATIONS / BATCH; batch++) {
        int c = (int) ((id + batch) % context_count);
        CHECK(cuCtxSetCurrent(contexts[c]));
        for (int i = 0; i < BATCH; i++) {
            size_t words_n = (size_t) 1024 << ((id + i) % 9); /* 4 KiB .. 1 MiB */
            unsigned int pattern = (unsigned int) (id * 7919 + batch * 131 + i) | 1u;
            CUdeviceptr p;
            CHECK(cuMemAllocAsync(&p, words_n * 4, streams[c]));
            CHECK(cuMemsetD32Async(p, pattern, words_n, streams[c]));
            CHECK(cuMemcpyDtoHAsync(&words[i], p + (words_n - 1) * 4, 4, streams[c]));
            CHECK(cuMemFreeAsync(p, streams[c]));
        }
        CHECK(cuStreamSynchronize(streams[c]));
        for (int i = 0; i < BATCH; i++) {
            unsigned int pattern = (unsigned int) (id * 7919 + batch * 131 + i) | 1u;
            if (words[i] != pattern) {
                mismatches++;
            }
        }
    }
    for (int c = 0; c < context_count; c++) {
        CHECK(cuCtxSetCurrent(contexts[c]));
        CHECK(cuStreamDestroy(streams[c]));
    }
    CHECK(cuMemFreeHost(words));
    pthread_mutex_lock(&total_lock);
    mismatches_total += mismatches;
    pthread_mutex_unlock(&total_lock);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s one_thread|one_thread_green|threads|threads_green [THREADS]\n", argv[0]);
        return 64;
    }
    int threads = argc > 2 ? atoi(argv[2]) : 16;
    int green = strcmp(argv[1], "one_thread_green") == 0 || strcmp(argv[1], "threads_green") == 0;
    if (strncmp(argv[1], "one_thread", 10) == 0) {
        threads = 1;
    }
    if (strcmp(argv[1], "one_thread") != 0 && strcmp(argv[1], "threads") != 0 && !green) {
        fprintf(stderr, "probe: unknown variant %s\n", argv[1]);
        return 64;
    }
    CUdevice dev;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&contexts[0], dev));
    if (green) {
        make_green_contexts(dev);
    }
    pthread_t ts[256];
    if (threads < 1 || threads > 256) {
        fprintf(stderr, "probe: THREADS must be 1..256\n");
        return 64;
    }
    for (long t = 0; t < threads; t++) {
        if (pthread_create(&ts[t], NULL, worker, (void *) t) != 0) {
            fprintf(stderr, "probe: pthread_create failed\n");
            return 2;
        }
    }
    for (int t = 0; t < threads; t++) {
        pthread_join(ts[t], NULL);
    }
    for (int i = 0; i < context_count - 1; i++) {
        CHECK(cuGreenCtxDestroy(greens[i]));
    }
    CHECK(cuDevicePrimaryCtxRelease(dev));
    printf("probe %s: %d threads x %d allocations on %d context(s), %d mismatches\n", argv[1], threads,
           ITERATIONS, context_count, mismatches_total);
    return mismatches_total == 0 ? 0 : 1;
}
