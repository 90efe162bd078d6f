// The kernels of initcheck_graph_alloc.c; its PTX string is `nvcc -ptx -arch=compute_80` of
// this file (regenerate it with the command in that file's header after a change here).
// One reader per variant, so that compute-sanitizer's reports name the variant.

extern "C" __global__ void write_t(unsigned int* t, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) t[i] = (unsigned int) i * 2654435761u + 12345u;
}

#define READER(name) \
    extern "C" __global__ void name(unsigned int* out, const unsigned int* t, int n) { \
        int i = blockIdx.x * blockDim.x + threadIdx.x; \
        if (i < n) out[i] = t[i] + t[(i + 1) % n]; \
    }

READER(read_graph_written)
READER(read_graph_memset)
READER(read_graph_second_alloc)
READER(read_graph_second_alloc_memset)
READER(read_eager)

// GraphMemoryGpuTest's own kernels, for the test_shape variant: t = in * a + b, then
// out[i] = (t[i] ^ (in[i] >> 3)) + t[(i + 1) % n], reading a buffer written by a host copy too.
extern "C" __global__ void scale(unsigned int* t, const unsigned int* in, int a, int b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) t[i] = in[i] * a + b;
}

extern "C" __global__ void mix(unsigned int* out, const unsigned int* t, const unsigned int* in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = (t[i] ^ (in[i] >> 3)) + t[(i + 1) % n];
}
