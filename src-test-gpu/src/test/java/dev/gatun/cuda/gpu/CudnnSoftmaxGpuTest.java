package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceView;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.blas.Blas;
import dev.gatun.cuda.blas.BlasType;
import dev.gatun.cuda.blas.Softmax;
import dev.gatun.cuda.blas.SoftmaxSpec;
import dev.gatun.cuda.junit.RequiresGpu;
import java.util.Locale;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * cuDNN's softmax forward through gatun-blas, row-wise (an attention score matrix) and log, fp32
 * and fp16, against the CPU on random inputs with poisoned outputs. Prints {@code CUDNN-SOFTMAX ...}.
 */
@RequiresGpu
@ExtendWith(BlasHost.Condition.class)
class CudnnSoftmaxGpuTest {

    @Test
    void rowSoftmaxesMatchTheCpu() {
        CudaContext ctx = Gpu.context();
        Blas blas = Blas.of(ctx);
        long seed = Gpu.seed();
        Random random = Gpu.random(seed);
        double worst = 0;
        int count = 0;
        try (Stream stream = ctx.createStream()) {
            for (BlasType type : new BlasType[] {BlasType.F32, BlasType.F16}) {
                for (boolean log : new boolean[] {false, true}) {
                    for (int[] shape : new int[][] {{1, 1}, {7, 33}, {128, 1024}}) {
                        int rows = shape[0];
                        int cols = shape[1];
                        SoftmaxSpec spec = new SoftmaxSpec(rows, cols, 1, 1, type, SoftmaxSpec.Mode.INSTANCE, log);
                        float[] x = new float[rows * cols];
                        for (int i = 0; i < x.length; i++) {
                            x[i] = BlasHost.round(type, (random.nextFloat() * 2 - 1) * 8);
                        }
                        DeviceView dx = BlasHost.upload(ctx, type, x);
                        DeviceView dy = BlasHost.poisoned(ctx, stream, type, x.length);
                        try (Softmax softmax = blas.softmax(spec)) {
                            softmax.run(stream, dx, dy);
                            stream.synchronize();
                        }
                        float[] y = BlasHost.download(dy, type);
                        double ulp = type == BlasType.F16 ? 0x1p-11 : 0x1p-22;
                        for (int r = 0; r < rows; r++) {
                            double max = Double.NEGATIVE_INFINITY;
                            for (int c = 0; c < cols; c++) {
                                max = Math.max(max, x[r * cols + c]);
                            }
                            double sum = 0;
                            for (int c = 0; c < cols; c++) {
                                sum += Math.exp(x[r * cols + c] - max);
                            }
                            for (int c = 0; c < cols; c++) {
                                double z = x[r * cols + c] - max;
                                double expected = log ? z - Math.log(sum) : Math.exp(z) / sum;
                                double tolerance = 4 * ulp * Math.max(1, Math.abs(expected)) + 1e-6 * (log ? cols : 1);
                                double error = Math.abs(y[r * cols + c] - expected);
                                assertTrue(error <= tolerance, spec + ": y(" + r + ", " + c + ") is " + y[r * cols + c]
                                        + ", the CPU says " + expected + " (seed " + seed + ")");
                                worst = Math.max(worst, error / tolerance);
                            }
                        }
                        dx.buffer().close();
                        dy.buffer().close();
                        count++;
                    }
                }
            }
        }
        System.out.println(String.format(Locale.ROOT, "CUDNN-SOFTMAX %d softmaxes (fp32 and fp16, plain and log, 1x1 to "
                + "128x1024) right against the CPU; worst error %.3f of its tolerance", count, worst));
    }
}
