// The kernels of the C comparison (runtime-bench, issue 11). The compare script compiles this
// file once to twins.ptx (nvcc -ptx, or NVRTC through Twin --ptx); the C twin (twins.c) and
// the Java twin (dev.gatun.cuda.bench.Twin) both load that same PTX text.
extern "C" __global__ void empty() {}

extern "C" __global__ void four(float* out, int n, float a, const float* in) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * in[i];
}

// The round-trip row (mapped_word_round_trip): one GPU thread answers the host's pings over two
// mapped words. For i = 1..n it spins on volatile reads until *ping == i, then writes *pong = i
// and fences it out to the host. Launched once per run with n = every operation of that run.
// If the host stops pinging (it died, or failed mid-run), the thread gives up after about
// PINGPONG_PATIENCE cycles (2^33: about 4 s at the H200's 1.98 GHz, longer at lower clocks)
// without the next ping, writes -1 to *pong and returns: a broken run fails, it does not keep
// the GPU busy for ever.
#define PINGPONG_PATIENCE (1LL << 33)

extern "C" __global__ void pingpong(volatile int* ping, volatile int* pong, int n) {
    for (int i = 1; i <= n; i++) {
        long long waiting_since = clock64();
        while (*ping != i) {
            if (clock64() - waiting_since > PINGPONG_PATIENCE) {
                *pong = -1;
                __threadfence_system();
                return;
            }
        }
        *pong = i;
        __threadfence_system();
    }
}
