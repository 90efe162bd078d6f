// Which way of turning GPU coredumps on writes a dump on this machine: the environment (way 0,
// set by the gpu-coredump script), global attributes before the context (1), the current
// context's after it (2). Each sets the file, lightweight flags with SKIP_ABORT, and the switch,
// printing the driver's results, then faults a kernel and prints what the synchronize returned.
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
__global__ void gatun_coredump_probe(int *p) { *p = 1; }
typedef CUresult (*setter)(CUcoredumpSettings, void *, size_t *);
typedef CUresult (*getter)(CUcoredumpSettings, void *, size_t *);
static void set(const char *what, setter s, getter g, CUcoredumpSettings a, const void *v, size_t n) {
    size_t sz = 0;
    CUresult q = g(a, NULL, &sz);
    unsigned char buf[1024] = {0};
    memcpy(buf, v, n);
    size_t use = sz ? sz : n;
    CUresult r = s(a, buf, &use);
    printf("%s attr %d: size query %d -> %zu, set %d\n", what, (int)a, (int)q, sz, (int)r);
}
int main(int argc, char **argv) {
    int mode = atoi(argv[1]);
    const char *file = argv[2];
    cuInit(0);
    int on = 1;
    int flags = CU_COREDUMP_LIGHTWEIGHT_FLAGS | CU_COREDUMP_SKIP_ABORT;
    if (mode == 1) {
        set("global", cuCoredumpSetAttributeGlobal, cuCoredumpGetAttributeGlobal, CU_COREDUMP_FILE, file, strlen(file) + 1);
        set("global", cuCoredumpSetAttributeGlobal, cuCoredumpGetAttributeGlobal, CU_COREDUMP_GENERATION_FLAGS, &flags, sizeof flags);
        set("global", cuCoredumpSetAttributeGlobal, cuCoredumpGetAttributeGlobal, CU_COREDUMP_ENABLE_ON_EXCEPTION, &on, 1);
    }
    cudaFree(0);
    if (mode == 2) {
        set("context", cuCoredumpSetAttribute, cuCoredumpGetAttribute, CU_COREDUMP_FILE, file, strlen(file) + 1);
        set("context", cuCoredumpSetAttribute, cuCoredumpGetAttribute, CU_COREDUMP_GENERATION_FLAGS, &flags, sizeof flags);
        set("context", cuCoredumpSetAttribute, cuCoredumpGetAttribute, CU_COREDUMP_ENABLE_ON_EXCEPTION, &on, 1);
        unsigned char b[8] = {0};
        size_t sz = 1;
        printf("context enable read back %d: %d\n", (int)cuCoredumpGetAttribute(CU_COREDUMP_ENABLE_ON_EXCEPTION, b, &sz), b[0]);
    }
    gatun_coredump_probe<<<1, 1>>>((int *)0x100);
    cudaError_t e = cudaDeviceSynchronize();
    printf("mode %d sync: %s\n", mode, cudaGetErrorName(e));
    return 0;
}
