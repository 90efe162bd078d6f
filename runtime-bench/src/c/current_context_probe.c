/*
 * Which driver calls need the calling thread's current context to be the one their handles
 * belong to? Gatun's checked layer makes a context current only where the driver needs it.
 * This probe makes a second context current (as another library on the thread might) and
 * then uses handles of the primary context: a launch, a graph launch, async copies, event
 * record/query, stream-ordered allocation and a stream wait. Prints one line per call:
 * "<call> ok" when it succeeded and its result is right, "<call> <CUresult>" otherwise.
 *
 *   gcc -O2 -o probe current_context_probe.c -I/usr/local/cuda/include -lcuda
 *   ./probe fill.ptx      (fill.ptx: extern "C" __global__ void fill(int* p, int v) { p[threadIdx.x] = v; })
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#define N 32

static int report(const char *call, CUresult r, int right) {
    const char *name = "?";
    if (r != CUDA_SUCCESS) {
        cuGetErrorName(r, &name);
        printf("%s %s\n", call, name);
        return 1;
    }
    printf("%s %s\n", call, right ? "ok" : "WRONG RESULT");
    return right ? 0 : 1;
}

static int check_fill(CUdeviceptr d, int v) {
    int h[N];
    /* the primary context is current here again */
    if (cuMemcpyDtoH(h, d, sizeof h) != CUDA_SUCCESS) return 0;
    for (int i = 0; i < N; i++) if (h[i] != v) return 0;
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s fill.ptx\n", argv[0]); return 2; }
    CUdevice dev; CUcontext primary, other; CUmodule mod; CUfunction fill;
    CUstream s; CUevent e; CUdeviceptr d, d2;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&primary, dev) || cuCtxSetCurrent(primary)) {
        fprintf(stderr, "setup failed\n"); return 2;
    }
    FILE *f = fopen(argv[1], "rb"); if (!f) { perror(argv[1]); return 2; }
    static char ptx[1 << 16]; size_t n = fread(ptx, 1, sizeof ptx - 1, f); ptx[n] = 0; fclose(f);
    if (cuModuleLoadData(&mod, ptx) || cuModuleGetFunction(&fill, mod, "fill")
        || cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) || cuEventCreate(&e, CU_EVENT_DISABLE_TIMING)
        || cuMemAlloc(&d, N * sizeof(int)) || cuMemAlloc(&d2, N * sizeof(int))) {
        fprintf(stderr, "setup 2 failed\n"); return 2;
    }
    /* a graph of one fill(d, 7), captured while the primary context is current */
    CUgraph g; CUgraphExec ge; int seven = 7; void *gargs[] = {&d, &seven};
    cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
    cuLaunchKernel(fill, 1, 1, 1, N, 1, 1, 0, s, gargs, NULL);
    if (cuStreamEndCapture(s, &g) || cuGraphInstantiate(&ge, g, 0)) { fprintf(stderr, "graph failed\n"); return 2; }

    if (cuCtxCreate(&other, NULL, 0, dev)) { fprintf(stderr, "cuCtxCreate failed\n"); return 2; }
    int failures = 0, v = 5; void *args[] = {&d, &v}; CUresult r; int h[N];

#define WITH_OTHER(call, expr, verify) do { \
        cuCtxSetCurrent(other); r = (expr); CUresult sync = cuStreamSynchronize(s); cuCtxSetCurrent(primary); \
        if (r == CUDA_SUCCESS) r = sync; failures += report(call, r, r == CUDA_SUCCESS && (verify)); } while (0)

    WITH_OTHER("cuLaunchKernel", cuLaunchKernel(fill, 1, 1, 1, N, 1, 1, 0, s, args, NULL), check_fill(d, 5));
    cuMemsetD32(d, 0, N);
    WITH_OTHER("cuGraphLaunch", cuGraphLaunch(ge, s), check_fill(d, 7));
    for (int i = 0; i < N; i++) h[i] = 11;
    WITH_OTHER("cuMemcpyHtoDAsync", cuMemcpyHtoDAsync(d2, h, sizeof h, s), check_fill(d2, 11));
    WITH_OTHER("cuMemcpyDtoDAsync", cuMemcpyDtoDAsync(d, d2, sizeof h, s), check_fill(d, 11));
    WITH_OTHER("cuMemsetD32Async", cuMemsetD32Async(d, 3, N, s), check_fill(d, 3));
    WITH_OTHER("cuEventRecord", cuEventRecord(e, s), 1);
    WITH_OTHER("cuEventQuery", cuEventQuery(e), 1);
    WITH_OTHER("cuStreamWaitEvent", cuStreamWaitEvent(s, e, 0), 1);
    WITH_OTHER("cuStreamQuery", cuStreamQuery(s), 1);
    CUdeviceptr a = 0;
    WITH_OTHER("cuMemAllocAsync", cuMemAllocAsync(&a, 4096, s), a != 0);
    WITH_OTHER("cuMemFreeAsync", cuMemFreeAsync(a, s), 1);
    printf("probe finished: %d failure(s)\n", failures);
    return 0;
}
