package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceView;
import dev.gatun.cuda.Graph;
import dev.gatun.cuda.GraphExec;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.StreamCapture;
import dev.gatun.cuda.blas.Attention;
import dev.gatun.cuda.blas.AttentionSpec;
import dev.gatun.cuda.blas.Blas;
import dev.gatun.cuda.blas.BlasType;
import dev.gatun.cuda.junit.RequiresGpu;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * cuDNN's scaled-dot-product attention forward through gatun-blas ({@code Blas.attention}), fp16
 * and bf16, causal and not, against the CPU (double math) on random Q, K and V with O poisoned
 * first; one attention captured into a graph and replayed 100 times, each replay bit for bit the
 * eager result. Its C twin is {@code probes/cudnn-sdpa}. Prints {@code CUDNN-SDPA gatun: ...},
 * with the count of attentions whose plan was built from each graph ({@code graphs: {causal:
 * composite=6, no mask: SDPA_FWD=6}} when cuDNN takes cudnn-frontend's choice for each).
 *
 * <p>The tolerance: P is rounded to the inputs' type before P V and O to the output's, so each
 * element may be off by a few units of that type (2^-11 for fp16, 2^-8 for bf16) of
 * {@code sum_j P_j |V_j|} and of |O|; the bound takes four of each.
 */
@RequiresGpu
@ExtendWith(BlasHost.Condition.class)
class CudnnAttentionGpuTest {

    private static final int[][] SHAPES = {{1, 1, 64, 64, 64}, {2, 4, 128, 256, 64}, {1, 8, 512, 512, 128}};

    @Test
    void attentionsMatchTheCpuAndACapturedOneReplaysExactly() {
        CudaContext ctx = Gpu.context();
        Blas blas = Blas.of(ctx);
        long seed = Gpu.seed();
        Random random = Gpu.random(seed);
        double worst = 0;
        int count = 0;
        String replays = "not run";
        // Which graph each attention's plan was built from (Attention.toString names it), by mask.
        Map<String, Integer> graphs = new TreeMap<>();
        try (Stream stream = ctx.createStream()) {
            for (BlasType type : new BlasType[] {BlasType.F16, BlasType.BF16}) {
                for (boolean causal : new boolean[] {false, true}) {
                    for (int[] shape : SHAPES) {
                        AttentionSpec spec = AttentionSpec.of(shape[0], shape[1], shape[2], shape[3], shape[4], type);
                        spec = causal ? spec.causal() : spec;
                        float[] q = BlasHost.random(random, type, (int) (spec.bytesQ() / 2));
                        float[] k = BlasHost.random(random, type, (int) (spec.bytesKv() / 2));
                        float[] v = BlasHost.random(random, type, (int) (spec.bytesKv() / 2));
                        DeviceView dq = BlasHost.upload(ctx, type, q);
                        DeviceView dk = BlasHost.upload(ctx, type, k);
                        DeviceView dv = BlasHost.upload(ctx, type, v);
                        DeviceView dout = BlasHost.poisoned(ctx, stream, type, q.length);
                        try (Attention attention = blas.attention(spec)) {
                            graphs.merge((causal ? "causal: " : "no mask: ") + (attention.toString().contains(
                                    "SDPA_FWD") ? "SDPA_FWD" : "composite"), 1, Integer::sum);
                            attention.run(stream, dq, dk, dv, dout);
                            stream.synchronize();
                            float[] o = BlasHost.download(dout, type);
                            worst = Math.max(worst, check(spec, q, k, v, o, seed));
                            count++;
                            if (type == BlasType.F16 && causal && shape[0] == 2) {
                                replays = replay(stream, attention, dq, dk, dv, dout, o);
                            }
                        }
                        dq.buffer().close();
                        dk.buffer().close();
                        dv.buffer().close();
                        dout.buffer().close();
                    }
                }
            }
        }
        System.out.println(String.format(Locale.ROOT, "CUDNN-SDPA gatun: %d attentions right against the CPU (fp16 and "
                + "bf16, causal and not, (1,1,64,64,64) (2,4,128,256,64) (1,8,512,512,128)); worst error %.3f of its "
                + "tolerance; graphs: %s; captured and replayed: %s", count, worst, graphs, replays));
    }

    /** Captures one run, replays it 100 times over a poisoned O, and compares each result with the eager one. */
    private static String replay(Stream stream, Attention attention, DeviceView q, DeviceView k, DeviceView v,
            DeviceView o, float[] eager) {
        StreamCapture capture = stream.beginCapture(CaptureMode.GLOBAL);
        attention.run(stream, q, k, v, o);
        int exact = 0;
        try (Graph graph = capture.end(); GraphExec exec = graph.instantiate()) {
            for (int r = 0; r < 100; r++) {
                stream.memset(o.buffer().bytes(), (byte) 0xff);
                exec.launch(stream);
                stream.synchronize();
                float[] replayed = BlasHost.download(o, attention.spec().type());
                assertArrayEquals(eager, replayed, "replay " + r + " differs from the eager run");
                exact++;
            }
        }
        return exact + "/100 replays exact";
    }

    /** Compares O with the CPU at every element; returns the worst error as a fraction of its tolerance. */
    private static double check(AttentionSpec s, float[] q, float[] k, float[] v, float[] o, long seed) {
        double unit = s.type() == BlasType.F16 ? 0x1p-11 : 0x1p-8;
        int d = s.headDim();
        double worst = 0;
        double[] p = new double[s.seqKv()];
        for (int bh = 0; bh < s.batch() * s.heads(); bh++) {
            int qBase = bh * s.seqQ() * d;
            int kvBase = bh * s.seqKv() * d;
            for (int i = 0; i < s.seqQ(); i++) {
                double max = Double.NEGATIVE_INFINITY;
                for (int j = 0; j < s.seqKv(); j++) {
                    double dot = 0;
                    for (int c = 0; c < d; c++) {
                        dot += (double) q[qBase + i * d + c] * k[kvBase + j * d + c];
                    }
                    p[j] = s.causalMask() && j > i ? Double.NEGATIVE_INFINITY : dot * s.scale();
                    max = Math.max(max, p[j]);
                }
                double sum = 0;
                for (int j = 0; j < s.seqKv(); j++) {
                    p[j] = Math.exp(p[j] - max);
                    sum += p[j];
                }
                for (int c = 0; c < d; c++) {
                    double expected = 0;
                    double magnitude = 0;
                    for (int j = 0; j < s.seqKv(); j++) {
                        double wgt = p[j] / sum;
                        expected += wgt * v[kvBase + j * d + c];
                        magnitude += wgt * Math.abs(v[kvBase + j * d + c]);
                    }
                    double got = o[qBase + i * d + c];
                    double tolerance = 4 * unit * (magnitude + Math.abs(expected)) + 1e-5;
                    double error = Math.abs(got - expected);
                    assertTrue(error <= tolerance, s + ": O[" + bh + "](" + i + ", " + c + ") is " + got + ", the CPU "
                            + "says " + expected + " (tolerance " + tolerance + "; seed " + seed + ")");
                    worst = Math.max(worst, error / tolerance);
                }
            }
        }
        return worst;
    }
}
