package dev.gatun.cuda.blas;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.gatun.cuda.DeviceView;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.testing.Background;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Every library and driver call a warm GEMM and a warm matmul make, counted exactly on the
 * simulated driver and libraries: a warm cuBLAS GEMM on the stream its handle is bound to is one
 * {@code cublasGemmEx}, a warm matmul one {@code cublasLtMatmul}, each with the one
 * {@code cuCtxGetCurrent} of {@code Stream.submitForeign}; the handle is bound again
 * ({@code cublasSetStream}, {@code cublasSetWorkspace}) exactly when its stream or workspace changes
 * or a cuBLAS call failed.
 */
class BlasWarmCallsTest {

    private static final Map<String, Integer> ONE_GEMM = Map.of("cublasGemmEx", 1);
    private static final Map<String, Integer> BIND_AND_GEMM = Map.of("cublasSetStream_v2", 1, "cublasSetWorkspace_v2", 1,
            "cublasGemmEx", 1);
    private static final Map<String, Integer> CURRENT_ONLY = Map.of("cuCtxGetCurrent", 1);

    private final BlasWorld w = new BlasWorld();
    private final List<String> driverCalls = new ArrayList<>();
    private final GemmSpec spec = GemmSpec.of(64, 64, 64, BlasType.F16);
    private final DeviceView a = w.matrix(BlasType.F16, 64 * 64);
    private final DeviceView b = w.matrix(BlasType.F16, 64 * 64);
    private final DeviceView d = w.matrix(BlasType.F16, 64 * 64);

    BlasWarmCallsTest() {
        w.interposer.around((function, args, real) -> {
            if (!function.equals(FakeBlasApi.KERNEL)) { // the fake library's stand-in for its own kernel
                synchronized (driverCalls) {
                    driverCalls.add(function);
                }
            }
            return real.call();
        });
    }

    /** What {@code step} called: the library functions and the driver functions, each with its count. */
    private record Calls(Map<String, Integer> library, Map<String, Integer> driver) {
    }

    private Calls callsOf(Runnable step) {
        Map<String, Integer> before = w.fake.counts();
        int driverBefore;
        synchronized (driverCalls) {
            driverBefore = driverCalls.size();
        }
        step.run();
        Map<String, Integer> library = new HashMap<>();
        w.fake.counts().forEach((f, n) -> {
            int delta = n - before.getOrDefault(f, 0);
            if (delta != 0) {
                library.put(f, delta);
            }
        });
        Map<String, Integer> driver = new HashMap<>();
        synchronized (driverCalls) {
            driverCalls.subList(driverBefore, driverCalls.size()).forEach(f -> driver.merge(f, 1, Integer::sum));
        }
        return new Calls(library, driver);
    }

    @Test
    void aWarmGemmOnTheSameStreamIsOneCublasGemmExAndSwitchingStreamsBindsAgain() {
        Blas blas = w.blas();
        Gemm gemm = blas.gemm(spec);
        try (Stream s1 = w.ctx.createStream(); Stream s2 = w.ctx.createStream()) {
            blas.prepare(s1);
            blas.prepare(s2);
            assertEquals(new Calls(BIND_AND_GEMM, CURRENT_ONLY), callsOf(() -> gemm.run(s1, a, b, d)), "the first GEMM");
            for (int i = 0; i < 3; i++) {
                assertEquals(new Calls(ONE_GEMM, CURRENT_ONLY), callsOf(() -> gemm.run(s1, a, b, d)),
                        "a warm GEMM on the stream the handle is bound to");
            }
            assertEquals(new Calls(BIND_AND_GEMM, CURRENT_ONLY), callsOf(() -> gemm.run(s2, a, b, d)), "another stream");
            assertEquals(s2.handle().address(), (long) w.fake.last("cublasSetStream_v2")[1]);
            assertEquals(new Calls(ONE_GEMM, CURRENT_ONLY), callsOf(() -> gemm.run(s2, a, b, d)));
            Gemm other = blas.gemm(spec.withTranspose(Transpose.T, Transpose.N));
            assertEquals(new Calls(ONE_GEMM, CURRENT_ONLY), callsOf(() -> other.run(s2, a, b, d)),
                    "the binding is the handle's, shared by every Gemm of the context");
            assertEquals(new Calls(BIND_AND_GEMM, CURRENT_ONLY), callsOf(() -> gemm.run(s1, a, b, d)), "back to s1");
            assertEquals(s1.handle().address(), (long) w.fake.last("cublasSetStream_v2")[1]);
        }
        w.close();
    }

    @Test
    void aWarmMatmulIsOneCublasLtMatmul() {
        Blas blas = w.blas();
        DeviceView bias = w.matrix(BlasType.F16, 64);
        try (Stream s = w.ctx.createStream(); Matmul plain = blas.matmul(spec);
                Matmul gelu = blas.matmul(spec.withEpilogue(Epilogue.GELU_BIAS))) {
            plain.run(s, a, b, d);
            gelu.run(s, a, b, d, bias);
            for (int i = 0; i < 3; i++) {
                assertEquals(new Calls(Map.of("cublasLtMatmul", 1), CURRENT_ONLY), callsOf(() -> plain.run(s, a, b, d)));
                assertEquals(new Calls(Map.of("cublasLtMatmul", 1), CURRENT_ONLY),
                        callsOf(() -> gelu.run(s, a, b, d, bias)), "the same bias is not set again");
            }
        }
        w.close();
    }

    @Test
    void aReplacedWorkspaceIsBoundAgain() {
        Blas blas = w.blas();
        Gemm gemm = blas.gemm(spec);
        try (Stream s = w.ctx.createStream()) {
            gemm.run(s, a, b, d);
            blas.setWorkspaceBytes(4L << 20);
            assertEquals(BIND_AND_GEMM, callsOf(() -> gemm.run(s, a, b, d)).library(),
                    "the new workspace (allocated, the old one retired) is bound");
            assertEquals(4L << 20, (long) w.fake.last("cublasSetWorkspace_v2")[2]);
            assertEquals(new Calls(ONE_GEMM, CURRENT_ONLY), callsOf(() -> gemm.run(s, a, b, d)));
        }
        w.close();
    }

    @Test
    void aFailedCublasCallForgetsTheBinding() {
        Blas blas = w.blas();
        Gemm gemm = blas.gemm(spec);
        try (Stream s = w.ctx.createStream()) {
            gemm.run(s, a, b, d);
            w.fake.fail("cublasGemmEx", 13);
            assertThrows(BlasException.class, () -> gemm.run(s, a, b, d));
            w.fake.fail("cublasGemmEx", 0);
            assertEquals(new Calls(BIND_AND_GEMM, CURRENT_ONLY), callsOf(() -> gemm.run(s, a, b, d)),
                    "bound again after a failed cublasGemmEx");

            // s2's GEMM binds the handle to s2 (cublasSetStream succeeds) but not to s2's
            // workspace: the handle is on s2 now, so s's next GEMM must bind it again, not trust
            // the binding remembered from before.
            try (Stream s2 = w.ctx.createStream()) {
                blas.prepare(s2);
                w.fake.fail("cublasSetWorkspace_v2", 7);
                assertThrows(BlasException.class, () -> gemm.run(s2, a, b, d));
                w.fake.fail("cublasSetWorkspace_v2", 0);
                assertEquals(s2.handle().address(), (long) w.fake.last("cublasSetStream_v2")[1]);
                assertEquals(new Calls(BIND_AND_GEMM, CURRENT_ONLY), callsOf(() -> gemm.run(s, a, b, d)),
                        "bound again after a failed cublasSetWorkspace");
                assertEquals(s.handle().address(), (long) w.fake.last("cublasSetStream_v2")[1]);
                assertEquals(new Calls(ONE_GEMM, CURRENT_ONLY), callsOf(() -> gemm.run(s, a, b, d)));
            }
        }
        w.close();
    }

    @Test
    void aClosedStreamsBindingIsForgotten() {
        Blas blas = w.blas();
        Gemm gemm = blas.gemm(spec);
        Stream s = w.ctx.createStream();
        gemm.run(s, a, b, d);
        assertEquals(s.handle().address(), blas.cublasBinding.stream());
        s.close(); // its workspace is released: the handle no longer names memory Gatun may free
        assertEquals(0, blas.cublasBinding.stream(), "the binding outlived its stream");
        blas.prepare(w.ctx.computeStream());
        assertEquals(new Calls(BIND_AND_GEMM, CURRENT_ONLY), callsOf(() -> gemm.run(w.ctx.computeStream(), a, b, d)));
        w.close();
    }

    /**
     * T1 is held inside {@code cublasGemmEx} on s (the handle bound to s and its workspace); T2
     * closes s. The close waits for T1's submission (the stream's lock), and only then releases
     * s's workspace and forgets the binding: asserted by T2 seen waiting, then the binding empty
     * and the workspace gone once both finished.
     */
    @Test
    void aStreamClosedWhileItsGemmIsInsideCublasForgetsTheBindingAfterIt() {
        Blas blas = w.blas();
        Gemm gemm = blas.gemm(spec);
        Stream s = w.ctx.createStream();
        gemm.run(s, a, b, d);
        FakeBlasApi.Pause inGemm = w.fake.pauseIn("cublasGemmEx");
        Background<Void> t1 = Background.run("T1", () -> gemm.run(s, a, b, d));
        inGemm.awaitArrival();
        Background<Void> t2 = Background.run("T2", s::close);
        assertFalse(t2.awaitFinishedOrWaiting(), "T2 closed s while T1's GEMM was inside cuBLAS");
        inGemm.release();
        assertNull(t1.joinFailure());
        assertNull(t2.joinFailure());
        assertEquals(0, blas.cublasBinding.stream(), "the binding outlived its stream");
        assertEquals(0, blas.counters().workspaces());
        w.close();
    }

    /**
     * A GEMM, a batched GEMM, a matmul with a bias epilogue and a softmax pass only segments of
     * the global scope to their library calls (scalars, algorithm, handles, descriptors, device
     * pointers, stream): no arena session is acquired and released around them.
     */
    @Test
    void theCallsOfAGemmAMatmulAndASoftmaxTakeNoArenaSegment() {
        Blas blas = w.blas();
        DeviceView bias = w.matrix(BlasType.F16, 64);
        DeviceView batchD = w.matrix(BlasType.F16, 2 * 64 * 64);
        try (Stream s = w.ctx.createStream(); Matmul gelu = blas.matmul(spec.withEpilogue(Epilogue.GELU_BIAS));
                Softmax softmax = blas.softmax(SoftmaxSpec.rows(64, 64, BlasType.F16))) {
            blas.gemm(spec).run(s, a, b, d);
            blas.gemm(spec.withBatch(2, GemmSpec.SHARED, GemmSpec.SHARED, 0)).run(s, a, b, batchD);
            gelu.run(s, a, b, d, bias);
            softmax.run(s, a, d);
        }
        assertEquals(List.of(1, 1, 1, 1, 1, 1), List.of(w.fake.calls("cublasSetStream_v2"),
                w.fake.calls("cublasSetWorkspace_v2"), w.fake.calls("cublasGemmEx"),
                w.fake.calls("cublasGemmStridedBatchedEx"), w.fake.calls("cublasLtMatmul"),
                w.fake.calls("cudnnSoftmaxForward")), "every call was made (the batched GEMM on the bound handle)");
        assertEquals(Set.of(), w.fake.calledWithArenaSegments());
        w.close();
    }
}
