package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.DeviceView;
import dev.gatun.cuda.Event;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.blas.Blas;
import dev.gatun.cuda.blas.BlasType;
import dev.gatun.cuda.blas.Gemm;
import dev.gatun.cuda.blas.GemmSpec;
import dev.gatun.cuda.blas.Matmul;
import dev.gatun.cuda.junit.RequiresGpu;
import java.util.Arrays;
import java.util.Locale;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The Java twin of the bundle's {@code probes/blas-gemm} (C, the same cuBLASLt and cuBLAS calls):
 * the same rounds, the same line with {@code gatun} for {@code c}, to compare on one machine.
 * Throughput: an 8192^3 fp16 GEMM (fp32 accumulation), 10 per round between two timing events;
 * host: a 64^3 fp16 GEMM issued 10,000 times in a loop, the host's wall time per call. Seven
 * rounds, the four measures interleaved in each, after a warm-up round; medians printed as
 * {@code BLAS-THROUGHPUT gatun: ...}. It measures and prints; it asserts only that the GEMMs ran
 * (a timing is not a pass/fail criterion: compare the lines).
 */
@RequiresGpu
@ExtendWith(BlasHost.Condition.class)
@Tag(GpuTags.TIMING) // a measurement: under a sanitizer it measures the tool
@Tag(GpuTags.LARGE) // 8192^3 GEMMs: minutes under a sanitizer's instrumented library kernels
class BlasThroughputGpuTest {

    private static final int ROUNDS = 7;
    private static final int BIG = 8192;
    private static final int SMALL = 64;
    private static final int BIG_PER_ROUND = 10;
    private static final int SMALL_PER_ROUND = 10_000;

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }

    private static DeviceView halves(CudaContext ctx, Stream stream, int n) {
        DeviceBuffer b = ctx.allocate((long) n * n * 2);
        stream.memset(b.bytes(), (byte) 0x3c); // 0x3c3c: about 1.06 in fp16, as the C twin
        return b.as(BlasType.F16.elementType());
    }

    @Test
    void throughputAndHostTimeBesideTheCTwin() {
        CudaContext ctx = Gpu.context();
        Blas blas = Blas.of(ctx);
        GemmSpec big = GemmSpec.of(BIG, BIG, BIG, BlasType.F16);
        GemmSpec small = GemmSpec.of(SMALL, SMALL, SMALL, BlasType.F16);
        double[] tflopsLt = new double[ROUNDS];
        double[] tflopsBlas = new double[ROUNDS];
        double[] hostLt = new double[ROUNDS];
        double[] hostBlas = new double[ROUNDS];
        try (Stream s = ctx.createStream(); Event start = ctx.createTimingEvent(); Event stop = ctx.createTimingEvent();
                Matmul bigLt = blas.matmul(big); Matmul smallLt = blas.matmul(small)) {
            Gemm bigBlas = blas.gemm(big);
            Gemm smallBlas = blas.gemm(small);
            DeviceView a = halves(ctx, s, BIG);
            DeviceView b = halves(ctx, s, BIG);
            DeviceView d = halves(ctx, s, BIG);
            DeviceView sa = halves(ctx, s, SMALL);
            DeviceView sb = halves(ctx, s, SMALL);
            DeviceView sd = halves(ctx, s, SMALL);
            double flops = 2.0 * BIG * BIG * (double) BIG * BIG_PER_ROUND;
            for (int r = -1; r < ROUNDS; r++) { // round -1 warms every path
                start.record(s);
                for (int i = 0; i < BIG_PER_ROUND; i++) {
                    bigLt.run(s, a, b, d);
                }
                stop.record(s);
                stop.synchronize();
                double lt = flops / (stop.elapsedMillis(start) * 1e-3) / 1e12;

                start.record(s);
                for (int i = 0; i < BIG_PER_ROUND; i++) {
                    bigBlas.run(s, a, b, d);
                }
                stop.record(s);
                stop.synchronize();
                double cublas = flops / (stop.elapsedMillis(start) * 1e-3) / 1e12;

                s.synchronize();
                long t0 = System.nanoTime();
                for (int i = 0; i < SMALL_PER_ROUND; i++) {
                    smallLt.run(s, sa, sb, sd);
                }
                long t1 = System.nanoTime();
                s.synchronize();
                double ltHost = (t1 - t0) / 1e3 / SMALL_PER_ROUND;

                t0 = System.nanoTime();
                for (int i = 0; i < SMALL_PER_ROUND; i++) {
                    smallBlas.run(s, sa, sb, sd);
                }
                t1 = System.nanoTime();
                s.synchronize();
                double blasHost = (t1 - t0) / 1e3 / SMALL_PER_ROUND;
                if (r >= 0) {
                    tflopsLt[r] = lt;
                    tflopsBlas[r] = cublas;
                    hostLt[r] = ltHost;
                    hostBlas[r] = blasHost;
                }
            }
            for (DeviceView v : new DeviceView[] {a, b, d, sa, sb, sd}) {
                v.buffer().close();
            }
        }
        long expected = (long) (ROUNDS + 1) * (BIG_PER_ROUND + SMALL_PER_ROUND);
        assertTrue(blas.counters().matmuls() >= expected && blas.counters().gemms() >= expected,
                "every GEMM was submitted: " + blas.counters());
        System.out.println(String.format(Locale.ROOT, "BLAS-THROUGHPUT gatun: cuBLASLt %d^3 fp16 %.1f TFLOPS, cuBLAS %.1f "
                + "TFLOPS; host per %d^3 fp16 GEMM: cuBLASLt %.2f us, cuBLAS %.2f us (medians of %d interleaved rounds)",
                BIG, median(tflopsLt), median(tflopsBlas), SMALL, median(hostLt), median(hostBlas), ROUNDS));
    }
}
