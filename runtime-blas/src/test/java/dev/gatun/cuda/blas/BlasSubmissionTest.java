package dev.gatun.cuda.blas;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.DeviceView;
import dev.gatun.cuda.Graph;
import dev.gatun.cuda.GraphExec;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.StreamCapture;
import dev.gatun.cuda.testing.Background;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * GEMMs as submissions on Gatun streams, on the simulated driver and libraries: what reaches the
 * library, the per-stream workspace and its life, the algorithm cache, buffer tracking, captures,
 * and the cuBLAS handle's lock.
 */
class BlasSubmissionTest {

    private final BlasWorld w = new BlasWorld();
    private final GemmSpec spec = GemmSpec.of(64, 32, 16, BlasType.F16).withOutputType(BlasType.F32);

    private DeviceView a() {
        return w.matrix(BlasType.F16, spec.bytesA() / 2);
    }

    private DeviceView b() {
        return w.matrix(BlasType.F16, spec.bytesB() / 2);
    }

    private DeviceView d() {
        return w.matrix(BlasType.F32, spec.bytesD() / 4);
    }

    @Test
    void aGemmReachesCublasWithItsShapeTypesStreamAndTheStreamsWorkspace() {
        Blas blas = w.blas();
        DeviceView a = a();
        DeviceView b = b();
        DeviceView d = d();
        try (Stream s = w.ctx.createStream()) {
            GemmSpec t = spec.withTranspose(Transpose.T, Transpose.N).withLeadingDimensions(24, 0, 80).withScale(2f, 0f);
            DeviceView aT = w.matrix(BlasType.F16, t.bytesA() / 2);
            DeviceView dT = w.matrix(BlasType.F32, t.bytesD() / 4);
            blas.gemm(t).run(s, aT, b, dT);
            Object[] gemm = w.fake.last("cublasGemmEx");
            assertArrayEquals(new Object[] {Transpose.T.code(), Transpose.N.code(), 64, 32, 16, aT.address(),
                    BlasType.F16.cudaDataType(), 24, b.address(), BlasType.F16.cudaDataType(), 16, dT.address(),
                    BlasType.F32.cudaDataType(), 80, ComputeType.F32.code(), 2f}, gemm);
            assertEquals(s.handle().address(), (long) w.fake.last("cublasSetStream_v2")[1], "bound to the stream");
            Object[] workspace = w.fake.last("cublasSetWorkspace_v2");
            assertEquals(Blas.DEFAULT_WORKSPACE_BYTES, (long) workspace[2]);
            assertEquals(new BlasCounters(1, Blas.DEFAULT_WORKSPACE_BYTES, 0, 0, 1, 0, 0), blas.counters());

            blas.gemm(spec.withBatch(3, GemmSpec.SHARED, 0, 0)).run(s, a, w.matrix(BlasType.F16, 3 * 16 * 32),
                    w.matrix(BlasType.F32, 3 * 64 * 32));
            assertArrayEquals(new Object[] {Transpose.N.code(), Transpose.N.code(), 64, 32, 16, 64, 0L, 16, 512L, 64,
                    2048L, 3, ComputeType.F32.code()}, w.fake.last("cublasGemmStridedBatchedEx"));
        }
        w.close();
    }

    @Test
    void aWarmMatmulAsksNoHeuristicAndAllocatesNothingOnTheDevice() {
        Blas blas = w.blas();
        DeviceView a = a();
        DeviceView b = b();
        DeviceView d = d();
        try (Stream s = w.ctx.createStream(); Matmul first = blas.matmul(spec); Matmul again = blas.matmul(spec)) {
            assertEquals(1, w.fake.calls("cublasLtMatmulAlgoGetHeuristic"), "the same shape prepared twice asked once");
            first.run(s, a, b, d);
            long allocations = w.sim.gpu.liveDeviceAllocations();
            for (int i = 0; i < 32; i++) {
                again.run(s, a, b, d); // 32 GEMMs in flight on one stream
            }
            assertEquals(33, w.fake.calls("cublasLtMatmul"));
            assertEquals(1, w.fake.calls("cublasLtMatmulAlgoGetHeuristic"), "a warm matmul asked the heuristic");
            assertEquals(allocations, w.sim.gpu.liveDeviceAllocations(), "a warm matmul allocated device memory");
            assertEquals(1, blas.counters().workspaces(), "one workspace for every GEMM on the stream");
            assertEquals(Blas.DEFAULT_WORKSPACE_BYTES, (long) w.fake.last("cublasLtMatmul")[5]);
            assertEquals(2 * 3, w.fake.calls("cublasLtMatmulDescSetAttribute"), "only the three attributes of each "
                    + "prepare: a matmul without bias sets none per call");
            blas.setWorkspaceBytes(8L << 20);
            try (Matmul smaller = blas.matmul(spec)) {
                assertEquals(2, w.fake.calls("cublasLtMatmulAlgoGetHeuristic"), "another workspace size is another key");
                smaller.run(s, a, b, d);
                assertEquals(8L << 20, blas.counters().workspaceBytes(), "the stream's workspace was replaced");
            }
        }
        w.close();
    }

    @Test
    void aBiasIsSetOnTheDescriptorOnlyWhenItsAddressChanges() {
        Blas blas = w.blas();
        DeviceView bias = w.matrix(BlasType.F32, 64);
        DeviceView other = w.matrix(BlasType.F32, 64);
        try (Stream s = w.ctx.createStream(); Matmul m = blas.matmul(spec.withEpilogue(Epilogue.GELU_BIAS))) {
            DeviceView a = a();
            DeviceView b = b();
            DeviceView d = d();
            int prepared = w.fake.calls("cublasLtMatmulDescSetAttribute");
            m.run(s, a, b, d, bias);
            m.run(s, a, b, d, bias);
            assertEquals(prepared + 1, w.fake.calls("cublasLtMatmulDescSetAttribute"));
            assertEquals(bias.address(), (long) w.fake.last("cublasLtMatmulDescSetAttribute")[2]);
            m.run(s, a, b, d, other);
            assertEquals(prepared + 2, w.fake.calls("cublasLtMatmulDescSetAttribute"));
        }
        w.close();
    }

    @Test
    void operandsClosedWhileTheGemmIsQueuedAreFreedOnlyAfterIt() {
        Blas blas = w.blas();
        Stream s = w.ctx.createStream();
        DeviceView a = a();
        DeviceView b = b();
        DeviceView d = d();
        blas.prepare(s);
        java.lang.foreign.MemorySegment raw = s.handle();
        w.sim.gpu.hold(raw);
        blas.gemm(spec).run(s, a, b, d);
        long before = w.sim.gpu.liveDeviceAllocations();
        a.buffer().close();
        b.buffer().close();
        d.buffer().close();
        w.ctx.reap();
        assertEquals(before, w.sim.gpu.liveDeviceAllocations(), "an operand was freed under the queued GEMM");
        s.close(); // its workspace goes with it, once the GEMM ran
        assertEquals(0, blas.counters().workspaces());
        w.ctx.reap();
        assertEquals(before, w.sim.gpu.liveDeviceAllocations(), "the workspace was freed under the queued GEMM");
        w.sim.gpu.release(raw);
        w.ctx.synchronize();
        w.ctx.reap();
        assertEquals(0, w.sim.gpu.liveDeviceAllocations());
        assertEquals(List.of(), w.sim.gpu.violations());
        w.close();
    }

    @Test
    void aCapturedMatmulIsHeldByItsGraphAndReplays() {
        Blas blas = w.blas();
        DeviceView a = a();
        DeviceView b = b();
        DeviceView d = d();
        try (Stream s = w.ctx.createStream(); Matmul m = blas.matmul(spec)) {
            blas.prepare(s); // the workspace exists before the capture: nothing is allocated inside it
            long allocations = w.sim.gpu.liveDeviceAllocations();
            StreamCapture capture = s.beginCapture(CaptureMode.GLOBAL);
            m.run(s, a, b, d);
            try (Graph graph = capture.end()) {
                assertEquals(allocations, w.sim.gpu.liveDeviceAllocations(), "the capture allocated");
                a.buffer().close();
                w.ctx.reap();
                assertEquals(List.of(), w.sim.gpu.danglingGraphUses(), "the graph names a freed operand");
                try (GraphExec exec = graph.instantiate()) {
                    exec.launch(s);
                    exec.launch(s);
                }
            }
            s.synchronize();
        }
        b.buffer().close();
        d.buffer().close();
        w.close();
        assertEquals(List.of(), w.sim.gpu.violations());
    }

    @Test
    void theBlasClosesWithItsContextAndANewOneServesTheNext() {
        Blas blas = w.blas();
        assertSame(blas, w.blas(), "one per context");
        DeviceView a = a();
        DeviceView b = b();
        DeviceView d = d();
        blas.gemm(spec).run(w.ctx.computeStream(), a, b, d);
        Stream s = w.ctx.createStream();
        blas.prepare(s);
        assertEquals(2, blas.counters().workspaces());
        a.buffer().close();
        b.buffer().close();
        d.buffer().close();
        s.close();
        w.ctx.close(); // would refuse with the compute stream's workspace open, had the BLAS not closed first
        assertTrue(w.ctx.isClosed());
        assertEquals(0, w.fake.liveObjects(), "a handle or descriptor outlived the context");
        assertEquals(0, w.sim.gpu.liveDeviceAllocations());
        assertThrows(IllegalStateException.class, () -> blas.gemm(spec), "a closed BLAS served a GEMM");
        assertThrows(IllegalStateException.class, w::blas, "a closed context got a BLAS");
    }

    /**
     * The cuBLAS handle is one per context, its stream and workspace its state: T1 is held inside
     * its {@code cublasGemmEx} on stream s1; T2's GEMM on s2 must wait for the handle's lock
     * (asserted: it is seen waiting, and cuBLAS saw no second {@code cublasSetStream}), so T1's
     * GEMM runs on the stream it bound.
     */
    @Test
    void twoThreadsGemmsOnTwoStreamsNeverRebindTheHandleInsideTheOthersCall() {
        Blas blas = w.blas();
        DeviceView a = a();
        DeviceView b = b();
        DeviceView d1 = d();
        DeviceView d2 = d();
        try (Stream s1 = w.ctx.createStream(); Stream s2 = w.ctx.createStream()) {
            blas.prepare(s1);
            blas.prepare(s2);
            FakeBlasApi.Pause inGemm = w.fake.pauseIn("cublasGemmEx");
            Background<Void> t1 = Background.run("T1", () -> blas.gemm(spec).run(s1, a, b, d1));
            inGemm.awaitArrival();
            Background<Void> t2 = Background.run("T2", () -> blas.gemm(spec).run(s2, a, b, d2));
            assertFalse(t2.awaitFinishedOrWaiting(), "T2's GEMM ran while T1's held the cuBLAS handle");
            assertEquals(1, w.fake.calls("cublasSetStream_v2"), "T2 rebound the handle inside T1's call");
            inGemm.release();
            assertNull(t1.joinFailure());
            assertNull(t2.joinFailure());
            assertEquals(2, w.fake.calls("cublasGemmEx"));
            assertEquals(s2.handle().address(), (long) w.fake.last("cublasSetStream_v2")[1]);
            assertNotSame(d1, d2);
        }
        w.close();
    }
    /**
     * The BLAS closed (as its context closes) while another thread's GEMM is inside
     * {@code cublasGemmEx}: T2's close must wait for the call (asserted: T2 is seen waiting, and
     * no {@code cublasDestroy} came under the call). It waits twice over: releasing the stream's
     * workspace takes the cuBLAS handle's lock (to forget the binding) and the stream's lock (the
     * buffer's retirement fences the stream), both held by the GEMM until its call returned, and
     * the handle goes under its lock. Then T1's GEMM is counted, and a GEMM after the close is
     * refused.
     */
    @Test
    void aBlasClosedWhileAGemmIsInsideCublasDestroysTheHandleAfterTheCall() {
        Blas blas = w.blas();
        DeviceView a = a();
        DeviceView b = b();
        DeviceView d = d();
        try (Stream s = w.ctx.createStream()) {
            blas.prepare(s);
            Gemm gemm = blas.gemm(spec);
            FakeBlasApi.Pause inGemm = w.fake.pauseIn("cublasGemmEx");
            Background<Void> t1 = Background.run("T1", () -> gemm.run(s, a, b, d));
            inGemm.awaitArrival();
            Background<Void> t2 = Background.run("T2", blas::close);
            assertFalse(t2.awaitFinishedOrWaiting(), "T2's close finished while T1 was inside cublasGemmEx");
            assertEquals(0, w.fake.calls("cublasDestroy_v2"), "the handle was destroyed under the call");
            inGemm.release();
            assertNull(t1.joinFailure());
            assertNull(t2.joinFailure());
            assertEquals(1, w.fake.calls("cublasDestroy_v2"));
            assertEquals(1, blas.counters().gemms());
            assertThrows(IllegalStateException.class, () -> gemm.run(s, a, b, d), "a GEMM ran on a closed BLAS");
        }
        w.close();
    }

    /**
     * The BLAS closed (as its context closes) while another thread's matmul is inside
     * {@code cublasLtMatmul}: T2's close must wait for the call (asserted: it is seen waiting, and
     * neither the cuBLASLt handle nor the matmul's descriptors were destroyed under it: releasing
     * the stream's workspace fences the stream under its lock, which the matmul holds), then
     * closes the open matmul (its descriptors destroyed once) and destroys the handle; the matmul
     * is refused afterwards. Before the BLAS closed its matmuls, their descriptors outlived it.
     */
    @Test
    void aBlasClosedWhileAMatmulIsInsideCublasLtClosesItAfterTheCall() {
        Blas blas = w.blas();
        DeviceView a = a();
        DeviceView b = b();
        DeviceView d = d();
        try (Stream s = w.ctx.createStream()) {
            blas.prepare(s);
            Matmul m = blas.matmul(spec);
            FakeBlasApi.Pause inMatmul = w.fake.pauseIn("cublasLtMatmul");
            Background<Void> t1 = Background.run("T1", () -> m.run(s, a, b, d));
            inMatmul.awaitArrival();
            Background<Void> t2 = Background.run("T2", blas::close);
            assertFalse(t2.awaitFinishedOrWaiting(), "T2's close finished while T1 was inside cublasLtMatmul");
            assertEquals(0, w.fake.calls("cublasLtDestroy"), "the cuBLASLt handle was destroyed under the call");
            assertEquals(0, w.fake.calls("cublasLtMatmulDescDestroy"), "a descriptor destroyed under the call");
            inMatmul.release();
            assertNull(t1.joinFailure());
            assertNull(t2.joinFailure());
            assertEquals(1, w.fake.calls("cublasLtDestroy"));
            assertEquals(1, w.fake.calls("cublasLtMatmulDescDestroy"), "the open matmul was not closed with its BLAS");
            assertThrows(IllegalStateException.class, () -> m.run(s, a, b, d), "a matmul ran after its BLAS closed");
            m.close(); // idempotent: nothing destroyed twice
            assertEquals(1, w.fake.calls("cublasLtMatmulDescDestroy"));
        }
        w.close();
    }

    /**
     * A matmul prepared while the BLAS closes: T1 is held inside the cuBLASLt heuristic query of
     * {@code blas.matmul(spec)}, on the cuBLASLt handle; T2 closes the BLAS. The close must wait
     * for the preparation (asserted: T2 is seen waiting, and the handle was not destroyed under
     * the query), then closes the new matmul with the rest. Without the BLAS's monitor around
     * the preparation, the close destroyed the handle under the query.
     */
    @Test
    void aMatmulPreparedWhileTheBlasClosesIsClosedWithItAfterItsHeuristicQuery() {
        Blas blas = w.blas();
        FakeBlasApi.Pause inHeuristic = w.fake.pauseIn("cublasLtMatmulAlgoGetHeuristic");
        Background<Matmul> t1 = Background.call("T1", () -> blas.matmul(spec));
        inHeuristic.awaitArrival();
        Background<Void> t2 = Background.run("T2", blas::close);
        assertFalse(t2.awaitFinishedOrWaiting(), "T2's close finished while T1 was inside the heuristic query");
        assertEquals(0, w.fake.calls("cublasLtDestroy"), "the cuBLASLt handle was destroyed under the query");
        inHeuristic.release();
        assertNull(t1.joinFailure());
        assertNull(t2.joinFailure());
        assertEquals(1, w.fake.calls("cublasLtDestroy"));
        assertEquals(1, w.fake.calls("cublasLtMatmulDescDestroy"), "the matmul prepared meanwhile was not closed");
        w.close();
    }

    /**
     * A matmul closed on one thread while another runs it: T1 is held inside its
     * {@code cublasLtMatmul}; T2's close must wait (asserted: it is seen waiting, and no
     * descriptor was destroyed while cuBLASLt had them), and destroys them once T1's call
     * returned. Without the matmul's lock the close destroys them under the call.
     */
    @Test
    void aMatmulClosedWhileAnotherThreadRunsItDestroysItsDescriptorsAfterTheCall() {
        Blas blas = w.blas();
        DeviceView a = a();
        DeviceView b = b();
        DeviceView d = d();
        try (Stream s = w.ctx.createStream()) {
            blas.prepare(s);
            Matmul m = blas.matmul(spec);
            FakeBlasApi.Pause inMatmul = w.fake.pauseIn("cublasLtMatmul");
            Background<Void> t1 = Background.run("T1", () -> m.run(s, a, b, d));
            inMatmul.awaitArrival();
            Background<Void> t2 = Background.run("T2", m::close);
            assertFalse(t2.awaitFinishedOrWaiting(), "T2's close finished while T1 was inside cublasLtMatmul");
            assertEquals(0, w.fake.calls("cublasLtMatmulDescDestroy"), "a descriptor destroyed under the call");
            assertEquals(0, w.fake.calls("cublasLtMatrixLayoutDestroy"), "a layout destroyed under the call");
            inMatmul.release();
            assertNull(t1.joinFailure());
            assertNull(t2.joinFailure());
            assertEquals(1, w.fake.calls("cublasLtMatmulDescDestroy"));
            assertEquals(3, w.fake.calls("cublasLtMatrixLayoutDestroy"));
            assertThrows(IllegalStateException.class, () -> m.run(s, a, b, d), "a closed matmul ran");
        }
        w.close();
    }

    /**
     * One GEMM run from two threads on two streams: T1 is held inside the {@code cublasSetStream}
     * of its first run, its operands already set; T2's run of the same GEMM must not replace them
     * (they are the GEMM's slots), so T1's GEMM writes T1's D (the simulated library writes D's
     * first word). Without the GEMM's lock T2 set its D into the slots and T1's call wrote it.
     */
    @Test
    void oneGemmRunFromTwoThreadsKeepsEachRunsOperands() {
        Blas blas = w.blas();
        DeviceView a = a();
        DeviceView b = b();
        DeviceView d1 = d();
        DeviceView d2 = d();
        try (Stream s1 = w.ctx.createStream(); Stream s2 = w.ctx.createStream()) {
            blas.prepare(s1);
            blas.prepare(s2);
            d1.buffer().asInts().slice(0, 1).copyFrom(new int[] {0});
            d2.buffer().asInts().slice(0, 1).copyFrom(new int[] {0});
            Gemm gemm = blas.gemm(spec);
            FakeBlasApi.Pause inBind = w.fake.pauseIn("cublasSetStream_v2");
            Background<Void> t1 = Background.run("T1", () -> gemm.run(s1, a, b, d1));
            inBind.awaitArrival();
            Background<Void> t2 = Background.run("T2", () -> gemm.run(s2, a, b, d2));
            assertFalse(t2.awaitFinishedOrWaiting(), "T2's run finished while T1's was binding the handle");
            inBind.release();
            assertNull(t1.joinFailure());
            assertNull(t2.joinFailure());
            assertEquals(2, w.fake.calls("cublasGemmEx"));
            int[] first = new int[1];
            d1.buffer().asInts().slice(0, 1).copyTo(first);
            assertEquals(0x3f800000, first[0], "T1's GEMM did not write T1's D");
        }
        w.close();
    }

    /**
     * The lazy cuDNN handle against the BLAS's close: T1 is held inside the {@code cudnnCreate} of
     * its first softmax, T2 closes the BLAS. The close must wait for the handle and destroy it;
     * when it read the handle without the handle's lock it found none, finished, and the handle T1
     * then published was never destroyed.
     */
    @Test
    void aCudnnHandleMadeWhileTheBlasClosesIsDestroyed() {
        Blas blas = w.blas();
        FakeBlasApi.Pause inCreate = w.fake.pauseIn("cudnnCreate");
        Background<Void> t1 = Background.run("T1", () -> blas.softmax(SoftmaxSpec.rows(4, 8, BlasType.F32)).close());
        inCreate.awaitArrival();
        Background<Void> t2 = Background.run("T2", blas::close);
        assertFalse(t2.awaitFinishedOrWaiting(), "T2's close finished while T1 was making the cuDNN handle");
        assertEquals(0, w.fake.calls("cudnnDestroy"), "a handle destroyed before it was made");
        inCreate.release();
        Throwable refused = t1.joinFailure(); // T1's softmax may be refused once the BLAS is closed
        assertTrue(refused == null || refused instanceof IllegalStateException, "T1 failed otherwise: " + refused);
        assertNull(t2.joinFailure());
        assertEquals(1, w.fake.calls("cudnnCreate"));
        assertEquals(1, w.fake.calls("cudnnDestroy"), "the handle made during the close was not destroyed");
        w.close();
    }
}
