package dev.gatun.cuda.gpu;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.DeviceView;
import dev.gatun.cuda.Gatun;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.blas.Blas;
import dev.gatun.cuda.blas.BlasType;
import dev.gatun.cuda.blas.Epilogue;
import dev.gatun.cuda.blas.GemmSpec;
import dev.gatun.cuda.blas.Transpose;
import java.util.Random;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The host side of the BLAS GPU tests: operands rounded to their type, uploads and downloads of
 * F32, F16 and BF16 views, the CPU reference (double accumulation, then the epilogue) and its
 * tolerance, derived from the types: the GPU accumulates in fp32 (error below
 * {@code k 2^-23 sum|a b|}, doubled for margin) and rounds the result to the output type (half an
 * ulp of it: 2^-11 relative for F16, 2^-8 for BF16, 2^-24 for F32).
 */
final class BlasHost {

    private BlasHost() {
    }

    /**
     * Skips a BLAS test class where cuBLAS is absent, as {@code @RequiresGpu} skips without a
     * driver: unless {@code gatun.gpu.required=true}, which makes it a failure (the lent GPU
     * machines have cuBLAS 13 and cuDNN 9: the tests must run there).
     */
    static final class Condition implements ExecutionCondition {
        @Override
        public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
            boolean required = Gatun.readFlag("JUnit configuration parameter (or system property) gatun.gpu.required",
                    context.getConfigurationParameter("gatun.gpu.required").orElse(null), false);
            try {
                Blas.of(Gpu.context());
                return ConditionEvaluationResult.enabled("cuBLASLt and cuBLAS 13 loaded");
            } catch (CudaUnavailableException e) {
                if (required) {
                    throw e;
                }
                return ConditionEvaluationResult.disabled("no cuBLAS 13: " + e.getMessage());
            }
        }
    }

    /** {@code n} random values in [-1, 1), each exactly representable in {@code type}. */
    static float[] random(Random random, BlasType type, int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = round(type, random.nextFloat() * 2 - 1);
        }
        return v;
    }

    static float round(BlasType type, float x) {
        return switch (type) {
            case F32 -> x;
            case F16 -> Float.float16ToFloat(Float.floatToFloat16(x));
            case BF16 -> Float.intBitsToFloat(bf16(x) << 16);
        };
    }

    /** x's bfloat16 bits, rounded to nearest even. */
    private static int bf16(float x) {
        int bits = Float.floatToRawIntBits(x);
        return ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff;
    }

    /** A device view of {@code type} holding {@code values}. */
    static DeviceView upload(CudaContext ctx, BlasType type, float[] values) {
        DeviceBuffer b = ctx.allocate(Math.max(16, (long) values.length * type.bytes()));
        DeviceView v = b.as(type.elementType()).slice(0, values.length);
        if (type == BlasType.F32) {
            v.copyFrom(values);
        } else {
            short[] s = new short[values.length];
            for (int i = 0; i < s.length; i++) {
                s[i] = type == BlasType.F16 ? Float.floatToFloat16(values[i]) : (short) bf16(values[i]);
            }
            v.copyFrom(s);
        }
        return v;
    }

    /** A device view of {@code n} elements of {@code type}, every byte 0xFF (NaN in every type): unwritten elements show. */
    static DeviceView poisoned(CudaContext ctx, Stream stream, BlasType type, long n) {
        DeviceBuffer b = ctx.allocate(Math.max(16, n * type.bytes()));
        DeviceView v = b.as(type.elementType()).slice(0, n);
        stream.memset(b.bytes(), (byte) 0xff);
        return v;
    }

    static float[] download(DeviceView v, BlasType type) {
        int n = (int) v.elementCount();
        float[] out = new float[n];
        if (type == BlasType.F32) {
            v.copyTo(out);
        } else {
            short[] s = new short[n];
            v.copyTo(s);
            for (int i = 0; i < n; i++) {
                out[i] = type == BlasType.F16 ? Float.float16ToFloat(s[i]) : Float.intBitsToFloat((s[i] & 0xffff) << 16);
            }
        }
        return out;
    }

    /** Element (i, j) of op(X) for X stored column-major with leading dimension ld, batch b at stride. */
    private static double op(float[] x, Transpose t, long ld, long stride, int batch, int i, int j) {
        long index = batch * stride + (t == Transpose.N ? i + j * ld : j + i * ld);
        return x[(int) index];
    }

    /**
     * The CPU's D(i, j) of GEMM {@code batch}: the product in double, sum |a b| for the tolerance,
     * and the value before the activation (its input, for the tolerance of GELU).
     */
    static double[] reference(GemmSpec s, float[] a, float[] b, float[] bias, int batch, int i, int j) {
        double sum = 0;
        double magnitude = 0;
        for (int p = 0; p < s.k(); p++) {
            double x = op(a, s.transA(), s.effectiveLda(), s.effectiveStrideA(), batch, i, p);
            double y = op(b, s.transB(), s.effectiveLdb(), s.effectiveStrideB(), batch, p, j);
            sum += x * y;
            magnitude += Math.abs(x * y);
        }
        sum *= s.alpha();
        magnitude *= Math.abs(s.alpha());
        if (s.epilogue().hasBias()) {
            sum += bias[i];
            magnitude += Math.abs(bias[i]);
        }
        double pre = sum;
        sum = switch (s.epilogue()) {
            case RELU, RELU_BIAS -> Math.max(0, sum);
            case GELU, GELU_BIAS -> gelu(sum);
            default -> sum;
        };
        return new double[] {sum, magnitude, pre};
    }

    /** GELU in the tanh form, cuBLASLt's own. */
    private static double gelu(double x) {
        return 0.5 * x * (1 + Math.tanh(geluTanhArgument(x)));
    }

    private static double geluTanhArgument(double x) {
        return Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x);
    }

    /**
     * The largest error the types allow at one element: the accumulation's and two ulps of the
     * output type. With GELU, the error of its input as well, through GELU's slope there: on the
     * H100, cuBLASLt's bf16 GELU_BIAS of a pre-activation of about -2.25 came out 7.3e-4 from the
     * CPU, about what rounding that input to bf16 (half an ulp, 0.0078, times a slope of -0.059)
     * plus the output's rounding make; the fp32 accumulation alone allowed 3.1e-4. The bound
     * takes twice that input rounding, as the mechanism is inferred, not documented. And the
     * epilogue's own tanh: on the H100 an fp32 GELU of a pre-activation of about -0.43 came out
     * 1.7e-6 (12 ppm) from the CPU, far above fp32's rounding, as a hardware tanh approximation
     * makes; the bound allows tanh a relative error of 2^-10 (PTX's tanh.approx.f32 documents
     * 2^-10.987), which reaches GELU as half the input times that error.
     */
    static double tolerance(GemmSpec s, double value, double magnitude, double pre) {
        double outputUlp = switch (s.outputType()) {
            case F32 -> 0x1p-24;
            case F16 -> 0x1p-11;
            case BF16 -> 0x1p-8;
        };
        double accumulation = 2 * s.k() * 0x1p-23 * magnitude;
        if (s.epilogue() != Epilogue.GELU && s.epilogue() != Epilogue.GELU_BIAS) {
            return accumulation + 2 * outputUlp * Math.abs(value) + 1e-30;
        }
        double inputError = accumulation + 2 * outputUlp * Math.abs(pre); // the input rounded to the output type, with a margin
        double slope = 0; // GELU's steepest slope within the input's error
        for (double x : new double[] {pre - inputError, pre, pre + inputError}) {
            slope = Math.max(slope, Math.abs(gelu(x + 1e-6) - gelu(x - 1e-6)) / 2e-6);
        }
        double epilogueTanh = 0.5 * Math.abs(pre) * Math.abs(Math.tanh(geluTanhArgument(pre))) * 0x1p-10;
        return slope * inputError + epilogueTanh + 2 * outputUlp * Math.abs(value) + 1e-30;
    }

    /**
     * Compares D with the CPU at every element, or at {@code samples} random ones when the GEMM is
     * too large for a full CPU reference ({@code samples} 0: all); returns the worst error as a
     * fraction of its tolerance, and fails naming the element and the seed.
     */
    static double check(GemmSpec s, float[] a, float[] b, float[] bias, float[] d, int samples, Random random,
            long seed) {
        double worst = 0;
        long perBatch = s.effectiveStrideD();
        long total = (long) s.batchCount() * s.m() * s.n();
        long count = samples == 0 ? total : samples;
        for (long c = 0; c < count; c++) {
            long e = samples == 0 ? c : Math.floorMod(random.nextLong(), total);
            int batch = (int) (e / ((long) s.m() * s.n()));
            int i = (int) (e % s.m());
            int j = (int) (e / s.m() % s.n());
            double[] ref = reference(s, a, b, bias, batch, i, j);
            double got = d[(int) (batch * perBatch + i + (long) j * s.effectiveLdd())];
            double tol = tolerance(s, ref[0], ref[1], ref[2]);
            double err = Math.abs(got - ref[0]);
            if (!(err <= tol)) {
                throw new AssertionError(s + ": D[batch " + batch + "](" + i + ", " + j + ") is " + got + ", the CPU "
                        + "says " + ref[0] + " (tolerance " + tol + "; seed " + seed + ")");
            }
            worst = Math.max(worst, err / tol);
        }
        return worst;
    }
}
