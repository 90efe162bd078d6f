package dev.gatun.cuda.gpu;

import dev.gatun.cuda.Stream;
import dev.gatun.cuda.blas.Blas;
import dev.gatun.cuda.blas.BlasType;
import dev.gatun.cuda.blas.Epilogue;
import dev.gatun.cuda.blas.GemmSpec;
import dev.gatun.cuda.blas.Transpose;
import dev.gatun.cuda.junit.RequiresGpu;
import java.util.Locale;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * cuBLASLt matmuls with every epilogue (none, ReLU, bias, ReLU + bias, GELU, GELU + bias) for
 * fp32, fp16 and bf16 inputs, against the CPU on random inputs with poisoned outputs, including a
 * strided batch and transposes. Prints {@code BLAS-MATMUL ...}.
 */
@RequiresGpu
@ExtendWith(BlasHost.Condition.class)
class BlasMatmulGpuTest {

    @Test
    void everyEpilogueMatchesTheCpu() {
        Blas blas = Blas.of(Gpu.context());
        double worst = 0;
        int count = 0;
        long queriesBefore = blas.counters().heuristicQueries();
        try (Stream stream = Gpu.context().createStream()) {
            BlasType[][] types = {{BlasType.F32, BlasType.F32}, {BlasType.F16, BlasType.F32}, {BlasType.F16, BlasType.F16},
                    {BlasType.BF16, BlasType.BF16}};
            int[][] shapes = {{1, 1, 1}, {40, 24, 16}, {256, 128, 64}};
            for (Epilogue e : Epilogue.values()) {
                for (BlasType[] t : types) {
                    for (int[] shape : shapes) {
                        GemmSpec s = GemmSpec.of(shape[0], shape[1], shape[2], t[0]).withOutputType(t[1]).withEpilogue(e)
                                .withTranspose(count % 2 == 0 ? Transpose.N : Transpose.T, Transpose.N);
                        worst = Math.max(worst, BlasGemmGpuTest.run(blas, stream, s, true, 0));
                        count++;
                    }
                }
                GemmSpec batched = GemmSpec.of(48, 32, 16, BlasType.F16).withOutputType(BlasType.F32).withEpilogue(e)
                        .withBatch(3, 0, 0, 0);
                worst = Math.max(worst, BlasGemmGpuTest.run(blas, stream, batched, true, 0));
                count++;
            }
        }
        System.out.println(String.format(Locale.ROOT, "BLAS-MATMUL cuBLASLt: %d matmuls (6 epilogues x 4 type pairs x 3 "
                + "shapes, and a batch of 3 each) right against the CPU; worst error %.3f of its tolerance; %d heuristic "
                + "queries", count, worst, blas.counters().heuristicQueries() - queriesBefore));
    }
}
