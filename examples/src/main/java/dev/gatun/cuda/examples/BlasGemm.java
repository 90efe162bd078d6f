package dev.gatun.cuda.examples;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.ElementType;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.blas.Blas;
import dev.gatun.cuda.blas.BlasType;
import dev.gatun.cuda.blas.Epilogue;
import dev.gatun.cuda.blas.GemmSpec;
import dev.gatun.cuda.blas.Matmul;
import java.util.Arrays;
import java.util.Random;

/**
 * GEMMs with gatun-blas on device 0: a cuBLAS GEMM of random fp16 matrices into fp32 (fp32
 * accumulation), and a cuBLASLt matmul of random fp32 matrices with the bias + GELU epilogue
 * fused, both queued on the context's compute stream and checked against the CPU within a
 * tolerance derived from the types. Needs cuBLAS 13 and cuBLASLt 13 besides the driver (exit 3
 * with Gatun's diagnosis without them).
 *
 * <pre>java --enable-native-access=ALL-UNNAMED -cp ... dev.gatun.cuda.examples.BlasGemm</pre>
 */
public final class BlasGemm {

    /** D is M x N, A M x K, B K x N, column-major as cuBLAS; not square, so a transposition shows. */
    static final int M = 96;
    static final int N = 64;
    static final int K = 128;
    static final long SEED = 20261206L;
    /** GELU's steepest slope anywhere (about 1.13, near x = 1.5; 1.2 for margin): how far its input's error moves its output. */
    private static final double GELU_MAX_SLOPE = 1.2;

    private BlasGemm() {
    }

    public static void main(String[] args) {
        ExampleMain.exit("BlasGemm", cuda -> run(cuda.device(0).context(), SEED));
    }

    /**
     * Runs both GEMMs in {@code ctx} on inputs drawn from {@code seed}; whether both match the CPU.
     *
     * @throws dev.gatun.cuda.CudaUnavailableException when cuBLAS or cuBLASLt cannot be loaded
     *     (before anything is allocated)
     */
    static boolean run(CudaContext ctx, long seed) {
        Random random = new Random(seed);
        short[] a16 = halves(random, M * K);
        short[] b16 = halves(random, K * N);
        float[] a32 = floats(random, M * K);
        float[] b32 = floats(random, K * N);
        float[] bias = floats(random, M);
        float[] gemmOut = new float[M * N];
        float[] matmulOut = new float[M * N];
        float[] poison = new float[M * N];
        Arrays.fill(poison, Float.NaN); // an element the GPU does not write stays NaN and fails the check
        // snippet:blas-gemm
        Blas blas = Blas.of(ctx);                        // cuBLASLt and cuBLAS loaded, versions checked, handles made
        Stream stream = ctx.computeStream();
        GemmSpec halves = GemmSpec.of(M, N, K, BlasType.F16).withOutputType(BlasType.F32);   // fp32 accumulation
        GemmSpec geluBias = GemmSpec.of(M, N, K, BlasType.F32).withEpilogue(Epilogue.GELU_BIAS);
        try (DeviceBuffer a = ctx.allocate(2L * M * K); DeviceBuffer b = ctx.allocate(2L * K * N);
                DeviceBuffer x = ctx.allocate(4L * M * K); DeviceBuffer y = ctx.allocate(4L * K * N);
                DeviceBuffer bi = ctx.allocate(4L * M); DeviceBuffer d1 = ctx.allocate(4L * M * N);
                DeviceBuffer d2 = ctx.allocate(4L * M * N); Matmul matmul = blas.matmul(geluBias)) {
            a.as(ElementType.HALF).copyFrom(a16);        // fp16 bits
            b.as(ElementType.HALF).copyFrom(b16);
            x.asFloats().copyFrom(a32);
            y.asFloats().copyFrom(b32);
            bi.asFloats().copyFrom(bias);
            d1.asFloats().copyFrom(poison);
            d2.asFloats().copyFrom(poison);
            // D1 = A B: one cublasGemmEx
            blas.gemm(halves).run(stream, a.as(ElementType.HALF), b.as(ElementType.HALF), d1.asFloats());
            // D2 = GELU(X Y + bias): one cublasLtMatmul, the epilogue fused
            matmul.run(stream, x.asFloats(), y.asFloats(), d2.asFloats(), bi.asFloats());
            d1.asFloats().copyTo(gemmOut);               // ordered after both
            d2.asFloats().copyTo(matmulOut);
        }
        // end-snippet
        float[] a16AsFloats = new float[a16.length];
        float[] b16AsFloats = new float[b16.length];
        for (int i = 0; i < a16.length; i++) {
            a16AsFloats[i] = Float.float16ToFloat(a16[i]);
        }
        for (int i = 0; i < b16.length; i++) {
            b16AsFloats[i] = Float.float16ToFloat(b16[i]);
        }
        return matches(gemmOut, a16AsFloats, b16AsFloats, null) & matches(matmulOut, a32, b32, bias);
    }

    /**
     * Whether {@code got} is A B (with {@code bias}: GELU(A B + bias), bias[i] added to row i) in
     * fp32 within the types' tolerance at every element: fp32 accumulation errs by less than
     * {@code K 2^-23 sum|a b|} (taken twice, for margin), the fp32 result is rounded by half an ulp
     * (2^-24 relative, taken twice), and GELU moves its input's error by at most its slope.
     */
    static boolean matches(float[] got, float[] a, float[] b, float[] bias) {
        for (int j = 0; j < N; j++) {
            for (int i = 0; i < M; i++) {
                double sum = 0;
                double magnitude = 0;
                for (int k = 0; k < K; k++) {
                    double p = (double) a[i + k * M] * b[k + j * K];
                    sum += p;
                    magnitude += Math.abs(p);
                }
                double accumulation = 2 * K * 0x1p-23 * magnitude;
                double expected;
                double tolerance;
                if (bias == null) {
                    expected = sum;
                    tolerance = accumulation + 2 * 0x1p-24 * Math.abs(expected);
                } else {
                    double pre = sum + bias[i];
                    expected = gelu(pre);
                    double inputError = accumulation + 2 * 0x1p-24 * Math.abs(pre);
                    tolerance = GELU_MAX_SLOPE * inputError + 2 * 0x1p-24 * Math.abs(expected);
                }
                double value = got[i + j * M];
                if (!(Math.abs(value - expected) <= tolerance + 1e-30)) { // NaN fails too
                    System.err.printf("D(%d, %d) is %s, the CPU says %s (tolerance %.3g)%n", i, j, value, expected,
                            tolerance);
                    return false;
                }
            }
        }
        return true;
    }

    /** GELU in the tanh form, cuBLASLt's. */
    static double gelu(double x) {
        return 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x)));
    }

    /** {@code n} fp16 values uniform in [-1, 1), as their bits. */
    private static short[] halves(Random random, int n) {
        short[] h = new short[n];
        for (int i = 0; i < n; i++) {
            h[i] = Float.floatToFloat16(random.nextFloat(-1f, 1f));
        }
        return h;
    }

    /** {@code n} floats uniform in [-1, 1). */
    private static float[] floats(Random random, int n) {
        float[] f = new float[n];
        for (int i = 0; i < n; i++) {
            f[i] = random.nextFloat(-1f, 1f);
        }
        return f;
    }
}
