// The kernels of the C comparison (runtime-bench, issue 11). The compare script compiles this
// file once to twins.ptx (nvcc -ptx, or NVRTC through Twin --ptx); the C twin (twins.c) and
// the Java twin (dev.gatun.cuda.bench.Twin) both load that same PTX text.
extern "C" __global__ void empty() {}

extern "C" __global__ void four(float* out, int n, float a, const float* in) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * in[i];
}
