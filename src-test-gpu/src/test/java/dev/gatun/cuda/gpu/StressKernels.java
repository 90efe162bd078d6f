package dev.gatun.cuda.gpu;

/** The kernels of {@link StressGpuTest}, with the CPU computations they are checked against. */
final class StressKernels {

    /** y = x * a + b, in wrapping 32-bit integers. */
    static final String AFFINE = """
            extern "C" __global__ void affine(unsigned int* y, const unsigned int* x, unsigned int a,
                                              unsigned int b, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) y[i] = x[i] * a + b;
            }
            """;

    /** out[i] = table[index[i]]; an index outside the table raises the latch and writes 0. */
    static final String GATHER = """
            #include <gatun_latch.cuh>
            extern "C" __global__ void gather(const int* index, const float* table, float* out, int n, int m,
                                              unsigned int* latch) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i >= n) return;
                int k = index[i];
                if (k < 0 || k >= m) { gatun_latch_raise(latch, GATUN_LATCH_OUT_OF_RANGE); out[i] = 0.0f; return; }
                out[i] = table[k];
            }
            """;

    /** Writes the VERSION the image was compiled with (-DVERSION=...). */
    static final String VERSION = """
            extern "C" __global__ void version(int* out) { *out = VERSION; }
            """;

    private StressKernels() {
    }

    static int[] affine(int[] x, int a, int b) {
        int[] y = new int[x.length];
        for (int i = 0; i < x.length; i++) {
            y[i] = x[i] * a + b;
        }
        return y;
    }

    /** The raw bits of the gather's output floats. */
    static int[] gather(int[] index, float[] table) {
        int[] out = new int[index.length];
        for (int i = 0; i < index.length; i++) {
            int k = index[i];
            out[i] = Float.floatToRawIntBits(k >= 0 && k < table.length ? table[k] : 0.0f);
        }
        return out;
    }
}
