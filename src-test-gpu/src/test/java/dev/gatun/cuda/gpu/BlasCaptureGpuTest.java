package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceView;
import dev.gatun.cuda.Graph;
import dev.gatun.cuda.GraphExec;
import dev.gatun.cuda.MemoryInfo;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.StreamCapture;
import dev.gatun.cuda.blas.Blas;
import dev.gatun.cuda.blas.BlasType;
import dev.gatun.cuda.blas.Gemm;
import dev.gatun.cuda.blas.GemmSpec;
import dev.gatun.cuda.blas.Matmul;
import dev.gatun.cuda.junit.RequiresGpu;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * GEMMs in graphs and on several streams: a cuBLASLt matmul and a cuBLAS GEMM captured (global
 * mode) and replayed 1,000 times, each replay adding A B to D (beta 1; small integers, so the
 * fp32 result is exact); two threads on two streams at once; 32 GEMMs in flight on one stream,
 * sharing its one workspace (the device's used memory grows by that workspace at most). Prints
 * {@code BLAS-CAPTURE ...}.
 */
@RequiresGpu
@ExtendWith(BlasHost.Condition.class)
class BlasCaptureGpuTest {

    private static final int N = 64;
    private static final int REPLAYS = 1000;
    private static final List<String> LINES = new ArrayList<>();

    @AfterAll
    static void summary() {
        System.out.println("BLAS-CAPTURE " + String.join("; ", LINES));
    }

    /** Small integers (-2..2), exact in fp16, so sums of their products are exact in fp32. */
    private static float[] integers(Random random, int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = random.nextInt(5) - 2;
        }
        return v;
    }

    /** {@code times} A B, column-major, exactly. */
    private static float[] product(float[] a, float[] b, int times) {
        float[] d = new float[N * N];
        for (int j = 0; j < N; j++) {
            for (int i = 0; i < N; i++) {
                float sum = 0;
                for (int p = 0; p < N; p++) {
                    sum += a[i + p * N] * b[p + j * N];
                }
                d[i + j * N] = sum * times;
            }
        }
        return d;
    }

    @Test
    void aCapturedMatmulAndGemmReplayedAThousandTimesAddExactly() {
        CudaContext ctx = Gpu.context();
        Blas blas = Blas.of(ctx);
        long seed = Gpu.seed();
        Random random = Gpu.random(seed);
        float[] a = integers(random, N * N);
        float[] b = integers(random, N * N);
        GemmSpec spec = GemmSpec.of(N, N, N, BlasType.F16).withOutputType(BlasType.F32).withScale(1f, 1f);
        DeviceView da = BlasHost.upload(ctx, BlasType.F16, a);
        DeviceView db = BlasHost.upload(ctx, BlasType.F16, b);
        DeviceView d1 = BlasHost.upload(ctx, BlasType.F32, new float[N * N]);
        DeviceView d2 = BlasHost.upload(ctx, BlasType.F32, new float[N * N]);
        try (Stream stream = ctx.createStream(); Matmul matmul = blas.matmul(spec)) {
            Gemm gemm = blas.gemm(spec);
            // Warm, outside the capture: the workspace, and each library's first launch.
            DeviceView scratch = BlasHost.upload(ctx, BlasType.F32, new float[N * N]);
            matmul.run(stream, da, db, scratch);
            gemm.run(stream, da, db, scratch);
            stream.synchronize();
            scratch.buffer().close();
            long allocations = ctx.diagnostics().counters().liveBytes();
            StreamCapture capture = stream.beginCapture(CaptureMode.GLOBAL);
            matmul.run(stream, da, db, d1);
            gemm.run(stream, da, db, d2);
            try (Graph graph = capture.end(); GraphExec exec = graph.instantiate()) {
                assertEquals(allocations, ctx.diagnostics().counters().liveBytes(), "the capture allocated");
                for (int r = 0; r < REPLAYS; r++) {
                    exec.launch(stream);
                }
                stream.synchronize();
            }
            float[] expected = product(a, b, REPLAYS);
            assertArrayEquals(expected, BlasHost.download(d1, BlasType.F32), "cuBLASLt replays (seed " + seed + ")");
            assertArrayEquals(expected, BlasHost.download(d2, BlasType.F32), "cuBLAS replays (seed " + seed + ")");
        } finally {
            for (DeviceView v : List.of(da, db, d1, d2)) {
                v.buffer().close();
            }
        }
        LINES.add("a matmul and a GEMM captured, replayed " + REPLAYS + " times: exact");
    }

    @Test
    void twoThreadsOnTwoStreamsAtOnceGetTheirOwnResults() {
        CudaContext ctx = Gpu.context();
        Blas blas = Blas.of(ctx);
        int rounds = 200;
        List<CompletableFuture<Void>> threads = new ArrayList<>();
        for (int t = 0; t < 2; t++) {
            boolean cublas = t == 1;
            threads.add(CompletableFuture.runAsync(() -> {
                long seed = Gpu.seed();
                Random random = Gpu.random(seed);
                float[] a = integers(random, N * N);
                float[] b = integers(random, N * N);
                GemmSpec spec = GemmSpec.of(N, N, N, BlasType.F16).withOutputType(BlasType.F32);
                DeviceView da = BlasHost.upload(ctx, BlasType.F16, a);
                DeviceView db = BlasHost.upload(ctx, BlasType.F16, b);
                try (Stream stream = ctx.createStream(); Matmul matmul = blas.matmul(spec)) {
                    Gemm gemm = blas.gemm(spec);
                    DeviceView d = BlasHost.poisoned(ctx, stream, BlasType.F32, N * N);
                    for (int r = 0; r < rounds; r++) {
                        if (cublas) {
                            gemm.run(stream, da, db, d);
                        } else {
                            matmul.run(stream, da, db, d);
                        }
                    }
                    stream.synchronize();
                    assertArrayEquals(product(a, b, 1), BlasHost.download(d, BlasType.F32), "seed " + seed);
                    d.buffer().close();
                } finally {
                    da.buffer().close();
                    db.buffer().close();
                }
            }, runnable -> Thread.ofPlatform().name("blas-" + (cublas ? "cublas" : "cublaslt")).start(runnable)));
        }
        CompletableFuture.allOf(threads.toArray(CompletableFuture[]::new)).join(); // a failure in either is thrown here
        LINES.add("2 threads x " + rounds + " GEMMs on 2 streams (cuBLASLt and cuBLAS): right");
    }

    @Test
    void thirtyTwoGemmsInFlightOnOneStreamShareItsOneWorkspace() {
        CudaContext ctx = Gpu.context();
        Blas blas = Blas.of(ctx);
        GemmSpec spec = GemmSpec.of(1024, 1024, 1024, BlasType.F16).withOutputType(BlasType.F32);
        Random random = Gpu.random(Gpu.seed());
        DeviceView da = BlasHost.upload(ctx, BlasType.F16, BlasHost.random(random, BlasType.F16, 1024 * 1024));
        DeviceView db = BlasHost.upload(ctx, BlasType.F16, BlasHost.random(random, BlasType.F16, 1024 * 1024));
        try (Stream warm = ctx.createStream(); Stream stream = ctx.createStream(); Matmul matmul = blas.matmul(spec)) {
            DeviceView d = BlasHost.poisoned(ctx, warm, BlasType.F32, 1024 * 1024);
            matmul.run(warm, da, db, d); // the library's kernels loaded, on another stream
            warm.synchronize();
            long workspaces = blas.counters().workspaces();
            MemoryInfo before = ctx.diagnostics().memoryInfo();
            for (int i = 0; i < 32; i++) {
                matmul.run(stream, da, db, d);
            }
            MemoryInfo inFlight = ctx.diagnostics().memoryInfo();
            stream.synchronize();
            long grown = before.freeBytes() - inFlight.freeBytes();
            assertEquals(workspaces + 1, blas.counters().workspaces(), "the stream got one workspace");
            // The workspace comes from Gatun's memory (its pool may already hold it: 0 is right too),
            // rounded up to the driver's 2 MiB granularity; cuBLASLt allocates nothing itself.
            assertTrue(grown <= blas.workspaceBytes() + (2L << 20), "32 GEMMs in flight grew the device's used memory by "
                    + grown + " bytes; the workspace is " + blas.workspaceBytes());
            LINES.add(String.format(Locale.ROOT, "32 GEMMs in flight on one stream: used memory +%.1f MiB (workspace "
                    + "%.1f MiB)", grown / 1048576.0, blas.workspaceBytes() / 1048576.0));
            d.buffer().close();
        } finally {
            da.buffer().close();
            db.buffer().close();
        }
    }
}
