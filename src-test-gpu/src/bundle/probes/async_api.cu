// NVIDIA's asyncAPI pattern in CUDA C, the twin of AsyncApiGpuTest (src-test-gpu): a pinned
// buffer of 16M ints is uploaded on a non-blocking stream, a kernel adds a value to every element,
// the result is downloaded back into the same buffer, with events around the three; then the host
// counts how many times it asks whether the last event is done while the GPU works. The same three
// rounds as the Java test (the first two warm the path), every round's result checked on the
// host; the last round is printed as
//   ASYNC-API c: N host iterations while the GPU worked; download returned after X us (GPU time ...)
// and whether the upload had finished when the download call returned.
// Exit status: 0 when every result is right, 1 when one is wrong, 2 on a CUDA error (named).
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                                              \
    do {                                                                                         \
        cudaError_t r_ = (call);                                                                 \
        if (r_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "probe: %s failed: %s, line %d\n", #call, cudaGetErrorName(r_), __LINE__); \
            exit(2);                                                                             \
        }                                                                                        \
    } while (0)

__global__ void increment(int *data, int value) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    data[i] = data[i] + value;
}

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(void) {
    const int n = 16 << 20;
    const int block = 512;
    const int rounds = 3;
    const size_t bytes = (size_t) n * sizeof(int);
    unsigned seed = (unsigned) time(NULL);
    srand(seed);

    int *a;
    int *d;
    int *input = (int *) malloc(bytes);
    if (input == NULL) {
        fprintf(stderr, "probe: out of host memory\n");
        return 2;
    }
    CHECK(cudaHostAlloc((void **) &a, bytes, cudaHostAllocDefault));
    CHECK(cudaMalloc((void **) &d, bytes));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t start, uploaded, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreateWithFlags(&uploaded, cudaEventDisableTiming));
    CHECK(cudaEventCreate(&stop));

    unsigned long long iterations = 0;
    double download_us = 0;
    int upload_done = 0;
    float gpu_ms = 0;
    for (int r = 0; r < rounds; r++) {
        int value = 1 + rand() % 1000;
        for (int i = 0; i < n; i++) {
            input[i] = rand() & 0xFFFFFF;
        }
        memcpy(a, input, bytes);
        CHECK(cudaEventRecord(start, s));
        CHECK(cudaMemcpyAsync(d, a, bytes, cudaMemcpyHostToDevice, s));
        CHECK(cudaEventRecord(uploaded, s));
        void *args[] = {&d, &value};
        CHECK(cudaLaunchKernel((const void *) increment, dim3(n / block), dim3(block), args, 0, s));
        double before = now_us();
        CHECK(cudaMemcpyAsync(a, d, bytes, cudaMemcpyDeviceToHost, s));
        download_us = now_us() - before;
        cudaError_t q = cudaEventQuery(uploaded);
        if (q != cudaErrorNotReady) {
            CHECK(q);
        }
        upload_done = q == cudaSuccess;
        CHECK(cudaEventRecord(stop, s));
        iterations = 0;
        while ((q = cudaEventQuery(stop)) == cudaErrorNotReady) {
            iterations++;
        }
        CHECK(q);
        CHECK(cudaEventElapsedTime(&gpu_ms, start, stop));
        for (int i = 0; i < n; i++) {
            if (a[i] != input[i] + value) {
                fprintf(stderr, "probe: round %d, element %d is %d, expected %d (seed %u)\n", r, i, a[i],
                        input[i] + value, seed);
                return 1;
            }
        }
    }
    printf("ASYNC-API c: %llu host iterations while the GPU worked; download returned after %.1f us "
           "(GPU time %.3f ms, round %d of %d)\n", iterations, download_us, gpu_ms, rounds, rounds);
    printf("probe: the upload was %s when the download returned; every round matched the CPU\n",
           upload_done ? "done" : "still running");
    CHECK(cudaEventDestroy(stop));
    CHECK(cudaEventDestroy(uploaded));
    CHECK(cudaEventDestroy(start));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(d));
    CHECK(cudaFreeHost(a));
    free(input);
    return 0;
}
