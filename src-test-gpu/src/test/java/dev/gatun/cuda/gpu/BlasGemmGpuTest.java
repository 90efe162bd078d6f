package dev.gatun.cuda.gpu;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceView;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.blas.Blas;
import dev.gatun.cuda.blas.BlasType;
import dev.gatun.cuda.blas.GemmSpec;
import dev.gatun.cuda.blas.Matmul;
import dev.gatun.cuda.blas.Transpose;
import dev.gatun.cuda.junit.RequiresGpu;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * cuBLAS GEMMs ({@code cublasGemmEx}, {@code cublasGemmStridedBatchedEx}) through gatun-blas,
 * against the CPU on random inputs: fp32, fp16 and bf16 inputs with fp32 accumulation (fp32
 * output, and the input's own), every transpose, padded leading dimensions, a strided batch with
 * a shared A, shapes from 1x1x1; and a 4096^3 fp16 GEMM (cuBLAS and cuBLASLt) checked at 4,096
 * sampled elements (a full CPU reference is 6.9e10 multiply-adds). Outputs are poisoned (NaN)
 * first. Prints {@code BLAS-GEMM ...}.
 */
@RequiresGpu
@ExtendWith(BlasHost.Condition.class)
class BlasGemmGpuTest {

    private static final List<String> CASES = new ArrayList<>();
    private static int gemms;
    private static double worst;

    @AfterAll
    static void summary() {
        System.out.println(String.format(Locale.ROOT, "BLAS-GEMM cuBLAS: %d GEMMs right against the CPU (%s); worst "
                + "error %.3f of its tolerance", gemms, String.join(", ", CASES), worst));
    }

    /** Runs {@code s} once (cuBLAS, or cuBLASLt when {@code lt}) on fresh random operands and checks every element (or {@code samples}). */
    static double run(Blas blas, Stream stream, GemmSpec s, boolean lt, int samples) {
        CudaContext ctx = blas.context();
        long seed = Gpu.seed();
        Random random = Gpu.random(seed);
        float[] a = BlasHost.random(random, s.inputType(), (int) (s.bytesA() / s.inputType().bytes()));
        float[] b = BlasHost.random(random, s.inputType(), (int) (s.bytesB() / s.inputType().bytes()));
        float[] bias = BlasHost.random(random, s.outputType(), s.m());
        DeviceView da = BlasHost.upload(ctx, s.inputType(), a);
        DeviceView db = BlasHost.upload(ctx, s.inputType(), b);
        DeviceView dbias = BlasHost.upload(ctx, s.outputType(), bias);
        DeviceView dd = BlasHost.poisoned(ctx, stream, s.outputType(), s.bytesD() / s.outputType().bytes());
        try {
            if (lt) {
                try (Matmul m = blas.matmul(s)) {
                    if (s.epilogue().hasBias()) {
                        m.run(stream, da, db, dd, dbias);
                    } else {
                        m.run(stream, da, db, dd);
                    }
                }
            } else {
                blas.gemm(s).run(stream, da, db, dd);
            }
            stream.synchronize();
            float[] d = BlasHost.download(dd, s.outputType());
            return BlasHost.check(s, a, b, bias, d, samples, random, seed);
        } finally {
            for (DeviceView v : List.of(da, db, dbias, dd)) {
                v.buffer().close();
            }
        }
    }

    private static void record(String name, double error) {
        CASES.add(name);
        gemms++;
        worst = Math.max(worst, error);
    }

    @Test
    void everyTypeAndTransposeMatchesTheCpu() {
        Blas blas = Blas.of(Gpu.context());
        try (Stream stream = Gpu.context().createStream()) {
            BlasType[][] types = {{BlasType.F32, BlasType.F32}, {BlasType.F16, BlasType.F32}, {BlasType.F16, BlasType.F16},
                    {BlasType.BF16, BlasType.F32}, {BlasType.BF16, BlasType.BF16}};
            int[][] shapes = {{1, 1, 1}, {17, 33, 9}, {64, 48, 32}};
            int count = 0;
            for (BlasType[] t : types) {
                for (int[] shape : shapes) {
                    for (Transpose ta : Transpose.values()) {
                        for (Transpose tb : Transpose.values()) {
                            GemmSpec s = GemmSpec.of(shape[0], shape[1], shape[2], t[0]).withOutputType(t[1])
                                    .withTranspose(ta, tb);
                            worst = Math.max(worst, run(blas, stream, s, false, 0));
                            count++;
                        }
                    }
                }
            }
            CASES.add(count + " of 5 type pairs x 3 shapes x 4 transposes");
            gemms += count;
        }
    }

    @Test
    void paddedLeadingDimensionsAndAStridedBatchMatchTheCpu() {
        Blas blas = Blas.of(Gpu.context());
        try (Stream stream = Gpu.context().createStream()) {
            GemmSpec padded = GemmSpec.of(40, 24, 16, BlasType.F16).withOutputType(BlasType.F32)
                    .withTranspose(Transpose.T, Transpose.N).withLeadingDimensions(24, 40, 48);
            record("lds 24/40/48", run(blas, stream, padded, false, 0));
            GemmSpec batched = GemmSpec.of(32, 16, 8, BlasType.BF16).withOutputType(BlasType.F32)
                    .withBatch(5, GemmSpec.SHARED, 160, 0);
            record("batch of 5, A shared", run(blas, stream, batched, false, 0));
        }
    }

    @Test
    @Tag(GpuTags.LARGE) // 4096^3 under a sanitizer's instrumented library kernels: minutes
    void a4096CubedHalfGemmMatchesTheCpuAtSampledElements() {
        Blas blas = Blas.of(Gpu.context());
        try (Stream stream = Gpu.context().createStream()) {
            GemmSpec big = GemmSpec.of(4096, 4096, 4096, BlasType.F16).withOutputType(BlasType.F32);
            record("4096^3 fp16 cuBLAS (4096 sampled)", run(blas, stream, big, false, 4096));
            record("4096^3 fp16 cuBLASLt (4096 sampled)", run(blas, stream, big, true, 4096));
        }
    }
}
