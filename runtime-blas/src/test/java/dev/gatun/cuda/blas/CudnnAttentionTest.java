package dev.gatun.cuda.blas;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.DeviceView;
import dev.gatun.cuda.Graph;
import dev.gatun.cuda.GraphExec;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.StreamCapture;
import dev.gatun.cuda.blas.internal.bindings.cudnn.Cudnn;
import dev.gatun.cuda.testing.Background;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * cuDNN's attention forward on the simulated driver and libraries: the graph and variant pack
 * that reach cuDNN, the argument checks before it, the exact calls of a warm run, the workspace
 * rule, the refusal of a shape no engine runs, the descriptors' life, a capture, and a close
 * racing a run.
 */
class CudnnAttentionTest {

    private final BlasWorld w = new BlasWorld();
    private final AttentionSpec spec = AttentionSpec.of(2, 4, 128, 256, 64, BlasType.F16);
    private final List<String> driverCalls = new ArrayList<>();

    CudnnAttentionTest() {
        w.interposer.around((function, args, real) -> {
            if (!function.equals(FakeBlasApi.KERNEL)) {
                synchronized (driverCalls) {
                    driverCalls.add(function);
                }
            }
            return real.call();
        });
    }

    private DeviceView q() {
        return w.matrix(BlasType.F16, spec.bytesQ() / 2);
    }

    private DeviceView kv() {
        return w.matrix(BlasType.F16, spec.bytesKv() / 2);
    }

    private static void refused(String expected, Runnable r) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, r::run);
        assertTrue(e.getMessage().contains(expected), "the message names the problem: " + e.getMessage());
    }

    /** The library and driver calls {@code step} made, each with its count. */
    private Map<String, Integer> callsOf(Runnable step) {
        Map<String, Integer> before = w.fake.counts();
        int driverBefore;
        synchronized (driverCalls) {
            driverBefore = driverCalls.size();
        }
        step.run();
        Map<String, Integer> made = new HashMap<>();
        w.fake.counts().forEach((f, n) -> {
            if (n - before.getOrDefault(f, 0) != 0) {
                made.put(f, n - before.getOrDefault(f, 0));
            }
        });
        synchronized (driverCalls) {
            driverCalls.subList(driverBefore, driverCalls.size()).forEach(f -> made.merge(f, 1, Integer::sum));
        }
        return made;
    }

    @Test
    void specsAndViewsAreCheckedBeforeCudnnSeesThem() {
        refused("at least 1", () -> AttentionSpec.of(0, 1, 8, 8, 64, BlasType.F16).validate());
        refused("multiple of 8", () -> AttentionSpec.of(1, 1, 8, 8, 60, BlasType.F16).validate());
        refused("up to 256", () -> AttentionSpec.of(1, 1, 8, 8, 264, BlasType.F16).validate());
        refused("F16 or BF16", () -> AttentionSpec.of(1, 1, 8, 8, 64, BlasType.F32).validate());
        refused("finite", () -> AttentionSpec.of(1, 1, 8, 8, 64, BlasType.BF16).withScale(Float.NaN).validate());
        refused("2^62", () -> AttentionSpec.of(Integer.MAX_VALUE, Integer.MAX_VALUE, Integer.MAX_VALUE, 8, 64,
                BlasType.F16).validate());
        assertEquals(0.125f, AttentionSpec.of(1, 1, 8, 8, 64, BlasType.F16).scale(), "1 / sqrt(64) by default");
        assertEquals(2L * 4 * 128 * 64 * 2, spec.bytesQ());
        assertEquals(2L * 4 * 256 * 64 * 2, spec.bytesKv());
        Blas blas = w.blas();
        refused("multiple of 8", () -> blas.attention(AttentionSpec.of(1, 1, 8, 8, 12, BlasType.F16)));
        assertEquals(0, w.fake.calls("cudnnBackendCreateDescriptor"), "a refused spec reached cuDNN");

        DeviceView q = q();
        DeviceView k = kv();
        DeviceView v = kv();
        DeviceView o = q();
        try (Stream s = w.ctx.createStream(); Attention attention = blas.attention(spec)) {
            refused("Q is a view of FLOAT", () -> attention.run(s, q.buffer().asFloats(), k, v, o));
            refused("K holds " + (spec.bytesQ()) + " bytes", () -> attention.run(s, q, q, v, o));
            refused("V holds", () -> attention.run(s, q, k, v.slice(0, 8), o));
            refused("not a multiple of 16", () -> attention.run(s, q, k, v, w.matrix(BlasType.F16, spec.bytesQ() / 2 + 8)
                    .slice(1, spec.bytesQ() / 2)));
            refused("O is a view of BFLOAT16", () -> attention.run(s, q, k, v, o.buffer().as(
                    BlasType.BF16.elementType())));
            assertEquals(0, w.fake.calls("cudnnBackendExecute"), "a refused run reached cuDNN");
        }
        w.close();
    }

    /**
     * The graphs are cudnn-frontend 1.15's for cuDNN 9.14: an attention without a mask is one
     * SDPA_FWD operation (K BHSD, the scale a one-dimensional by-value tensor); a causal one is
     * the composite graph (two matmuls with padding value 0.0, the scale, the causal mask's four
     * pointwise ops, the softmax's two reductions, flagged not deterministic, and five pointwise
     * ops, its statistics included), K described as K^T; the virtual flag is set only on virtual
     * tensors; the variant pack names Q, K, V, O, the scale's host memory (holding the spec's
     * scale) and the stream's workspace.
     */
    @Test
    void theGraphAndTheVariantPackReachCudnn() {
        Blas blas = w.blas();
        DeviceView q = q();
        DeviceView k = kv();
        DeviceView v = kv();
        DeviceView o = q();
        try (Stream s = w.ctx.createStream(); Attention plain = blas.attention(spec.withScale(0.5f));
                Attention causal = blas.attention(spec.causal())) {
            assertTrue(plain.toString().contains("one SDPA_FWD operation, engine configuration 0 of 2"), plain.toString());
            assertTrue(causal.toString().contains("the composite graph, engine configuration 0 of 2"), causal.toString());
            assertEquals(1, w.fake.liveDescriptors(Cudnn.CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR()));
            assertEquals(2, w.fake.liveDescriptors(Cudnn.CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR()));
            assertEquals(2, w.fake.liveDescriptors(Cudnn.CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR()),
                    "the softmax's max and sum");
            assertEquals(10, w.fake.liveDescriptors(Cudnn.CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR()),
                    "scale, the causal mask's four, sub, exp, log, add, div");
            assertEquals(2, w.fake.liveDescriptors(Cudnn.CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR()), "one plan each");
            List<long[]> modes = w.fake.attribute(Cudnn.CUDNN_BACKEND_POINTWISE_DESCRIPTOR(),
                    Cudnn.CUDNN_ATTR_POINTWISE_MODE());
            assertEquals(2, modes.stream().filter(m -> m[0] == Cudnn.CUDNN_POINTWISE_GEN_INDEX()).count(),
                    "the causal mask's row and column indices");
            assertEquals(1, modes.stream().filter(m -> m[0] == Cudnn.CUDNN_POINTWISE_BINARY_SELECT()).count());
            assertEquals(1, modes.stream().filter(m -> m[0] == Cudnn.CUDNN_POINTWISE_LOG()).count(),
                    "the softmax statistics, emitted for inference too");
            List<long[]> strides = w.fake.attribute(Cudnn.CUDNN_BACKEND_TENSOR_DESCRIPTOR(),
                    Cudnn.CUDNN_ATTR_TENSOR_STRIDES());
            assertEquals(1, strides.stream().filter(st -> java.util.Arrays.equals(st, new long[] {4 * 256 * 64, 256 * 64,
                    1, 64})).count(), "the composite graph's K, stored BHSD, described as K^T (d the unit stride)");
            assertEquals(3, strides.stream().filter(st -> java.util.Arrays.equals(st, new long[] {4 * 256 * 64, 256 * 64,
                    64, 1})).count(), "SDPA_FWD's K (not transposed) and V, and the composite graph's V: BHSD");
            assertEquals(1, w.fake.attribute(Cudnn.CUDNN_BACKEND_TENSOR_DESCRIPTOR(), Cudnn.CUDNN_ATTR_TENSOR_DIMENSIONS())
                    .stream().filter(d -> d.length == 1).count(), "SDPA_FWD's scale: one dimension");
            assertEquals(List.of(0L, 0L), w.fake.attribute(Cudnn.CUDNN_BACKEND_MATMUL_DESCRIPTOR(),
                    Cudnn.CUDNN_ATTR_MATMUL_PADDING_VALUE()).stream().map(p -> p[0]).toList(), "padding value 0.0");
            assertEquals(List.of(0L, 0L), w.fake.attribute(Cudnn.CUDNN_BACKEND_REDUCTION_DESCRIPTOR(),
                    Cudnn.CUDNN_ATTR_REDUCTION_IS_DETERMINISTIC()).stream().map(d -> d[0]).toList(), "not deterministic");
            List<long[]> virtual = w.fake.attribute(Cudnn.CUDNN_BACKEND_TENSOR_DESCRIPTOR(),
                    Cudnn.CUDNN_ATTR_TENSOR_IS_VIRTUAL());
            assertEquals(13, virtual.size(), "the composite graph's 13 virtual tensors (S, scaled S, row, column, keep, "
                    + "masked, max, S - max, exp, sum, log sum, statistics, P), and no flag on the others");
            assertTrue(virtual.stream().allMatch(f -> f[0] == 1), "a virtual flag set false");

            plain.run(s, q, k, v, o);
            FakeBlasApi.VariantPack pack = w.fake.lastPack();
            assertArrayEquals(new long[] {1, 2, 3, 4, 5}, pack.uids());
            assertArrayEquals(new long[] {q.address(), k.address(), v.address(), o.address()},
                    java.util.Arrays.copyOf(pack.pointers(), 4));
            assertEquals(0.5f, MemorySegment.ofAddress(pack.pointer(AttentionGraph.UID_SCALE)).reinterpret(4)
                    .get(ValueLayout.JAVA_FLOAT, 0), "the scale, by value");
            assertEquals(s.handle().address(), (long) w.fake.last("cudnnSetStream")[1], "bound to the stream");
            assertEquals(1, blas.counters().workspaces(), "the stream's workspace");
            assertTrue(pack.workspace() != 0);

            causal.run(s, q, k, v, o);
            FakeBlasApi.VariantPack masked = w.fake.lastPack();
            assertArrayEquals(new long[] {1, 2, 3, 4, 5, 6}, masked.uids());
            assertEquals(Float.NEGATIVE_INFINITY, MemorySegment.ofAddress(masked.pointer(AttentionGraph.UID_NEG_INF))
                    .reinterpret(4).get(ValueLayout.JAVA_FLOAT, 0));
            assertEquals(pack.workspace(), masked.workspace(), "one workspace per stream, shared");
            assertEquals(2, blas.counters().attentions());
        }
        w.close();
    }

    /**
     * A warm run is one {@code cudnnBackendExecute} and the one {@code cuCtxGetCurrent} of
     * {@code Stream.submitForeign}; an operand at a new address rebuilds the variant pack (the old
     * one destroyed); another stream binds the handle again.
     */
    @Test
    void aWarmRunIsOneCudnnBackendExecute() {
        Blas blas = w.blas();
        DeviceView q = q();
        DeviceView k = kv();
        DeviceView v = kv();
        DeviceView o = q();
        DeviceView o2 = q();
        try (Stream s = w.ctx.createStream(); Stream s2 = w.ctx.createStream();
                Attention attention = blas.attention(spec.causal())) {
            blas.prepare(s);
            blas.prepare(s2);
            attention.run(s, q, k, v, o);
            for (int i = 0; i < 3; i++) {
                assertEquals(Map.of("cudnnBackendExecute", 1, "cuCtxGetCurrent", 1), callsOf(() -> attention.run(s, q, k,
                        v, o)), "a warm run");
            }
            assertEquals(Map.of("cudnnBackendDestroyDescriptor", 1, "cudnnBackendCreateDescriptor", 1,
                    "cudnnBackendSetAttribute", 3, "cudnnBackendFinalize", 1, "cudnnBackendExecute", 1, "cuCtxGetCurrent",
                    1), callsOf(() -> attention.run(s, q, k, v, o2)), "O moved: a new variant pack");
            assertEquals(o2.address(), w.fake.lastPack().pointer(AttentionGraph.UID_O));
            assertEquals(Map.of("cudnnBackendExecute", 1, "cuCtxGetCurrent", 1), callsOf(() -> attention.run(s, q, k, v,
                    o2)));
            Map<String, Integer> other = callsOf(() -> attention.run(s2, q, k, v, o2));
            assertEquals(1, other.get("cudnnSetStream"), "another stream binds the handle: " + other);
            assertEquals(1, other.get("cudnnBackendFinalize"), "and its workspace is another: a new pack");
            assertEquals(Map.of("cudnnBackendExecute", 1, "cuCtxGetCurrent", 1), callsOf(() -> attention.run(s2, q, k, v,
                    o2)));
            assertFalse(w.fake.calledWithArenaSegments().contains("cudnnBackendExecute"),
                    "cudnnBackendExecute took a segment of an arena");
        }
        w.close();
    }

    @Test
    void aPlanNeedingMoreWorkspaceThanTheStreamsIsRefusedNamingBothSizes() {
        w.fake.planWorkspaceBytes = 48L << 20;
        Blas blas = w.blas();
        DeviceView q = q();
        DeviceView k = kv();
        DeviceView v = kv();
        DeviceView o = q();
        try (Stream s = w.ctx.createStream(); Attention attention = blas.attention(spec)) {
            assertEquals(48L << 20, attention.workspaceBytes());
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> attention.run(s, q, k, v, o));
            assertTrue(e.getMessage().contains("needs " + (48L << 20) + " bytes") && e.getMessage().contains(
                    "the stream's is " + Blas.DEFAULT_WORKSPACE_BYTES) && e.getMessage().contains("setWorkspaceBytes"),
                    e.getMessage());
            assertEquals(0, w.fake.calls("cudnnBackendExecute"));
            blas.setWorkspaceBytes(48L << 20);
            attention.run(s, q, k, v, o);
            assertEquals(48L << 20, blas.counters().workspaceBytes(), "the stream's workspace grew");
            assertEquals(1, w.fake.calls("cudnnBackendExecute"));
        }
        w.close();
    }

    @Test
    void aShapeNoEngineRunsIsATypedExceptionNamingCudnnsStatusAndWhatToChange() {
        Blas blas = w.blas();
        blas.cudnnHandle();
        int before = w.fake.liveObjects();
        w.fake.engineConfigs = 0;
        w.fake.lastError = "no engine for this graph";
        BlasException none = assertThrows(BlasException.class, () -> blas.attention(spec));
        assertEquals("CUDNN_STATUS_NOT_SUPPORTED", none.statusName());
        assertTrue(none.getMessage().contains("no engine for this graph") && none.getMessage().contains(
                "change the head dimension"), none.getMessage());
        assertEquals(1, none.getSuppressed().length, "the single operation's refusal, kept: " + none);
        assertEquals(before, w.fake.liveObjects(), "a descriptor was left behind");

        w.fake.engineConfigs = 3;
        w.fake.refusingPlans = 6; // each form's three
        BlasException refused = assertThrows(BlasException.class, () -> blas.attention(spec));
        assertEquals("CUDNN_STATUS_NOT_SUPPORTED", refused.statusName());
        assertEquals("cudnnBackendFinalize(execution plan)", refused.operation());
        assertTrue(refused.getMessage().contains("none of the 3 engine configurations the heuristic offers builds the "
                + "composite graph"), refused.getMessage());
        assertTrue(refused.getSuppressed()[0].getMessage().contains("builds one SDPA_FWD operation"),
                refused.getSuppressed()[0].getMessage());
        assertEquals(before, w.fake.liveObjects(), "a descriptor was left behind");

        w.fake.refusingPlans = 5; // the composite graph's third configuration builds
        try (Attention third = blas.attention(spec)) {
            assertTrue(third.toString().contains("the composite graph, engine configuration 2 of 3"), third.toString());
            assertEquals(1, w.fake.liveDescriptors(Cudnn.CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR()),
                    "the refused plans were destroyed");
        }
        w.close();
    }

    /**
     * The single SDPA_FWD operation refused (every plan), the composite graph is built and used,
     * and nothing of the refused form is kept; a cuDNN older than 9.13.1 (which has no SDPA_FWD)
     * gets the composite graph without trying the operation, as cudnn-frontend does.
     */
    @Test
    void aRefusedSdpaOperationFallsBackToTheCompositeGraph() {
        Blas blas = w.blas();
        DeviceView q = q();
        DeviceView k = kv();
        DeviceView v = kv();
        DeviceView o = q();
        w.fake.refusingPlans = 2; // both of the single operation's configurations
        try (Stream s = w.ctx.createStream(); Attention attention = blas.attention(spec)) {
            assertTrue(attention.toString().contains("the composite graph, engine configuration 0 of 2"),
                    attention.toString());
            assertEquals(1, w.fake.createdDescriptors(Cudnn.CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR()), "tried");
            assertEquals(0, w.fake.liveDescriptors(Cudnn.CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR()), "and dropped");
            assertEquals(1, w.fake.liveDescriptors(Cudnn.CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR()), "one graph kept");
            assertEquals(1, w.fake.liveDescriptors(Cudnn.CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR()));
            assertEquals(2, w.fake.liveDescriptors(Cudnn.CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR()));
            attention.run(s, q, k, v, o);
            assertArrayEquals(new long[] {1, 2, 3, 4, 5}, w.fake.lastPack().uids(), "the same variant pack");
        }
        w.fake.cudnnVersion = 91300;
        try (Attention older = blas.attention(spec)) {
            assertTrue(older.toString().contains("the composite graph"), older.toString());
            assertEquals(1, w.fake.createdDescriptors(Cudnn.CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR()),
                    "no SDPA_FWD operation tried on a cuDNN without it");
        }
        w.close();
    }

    @Test
    void closeDestroysEveryDescriptorAndTheContextsCloseTheHandle() {
        Blas blas = w.blas();
        DeviceView q = q();
        DeviceView k = kv();
        DeviceView v = kv();
        DeviceView o = q();
        blas.prepare(w.ctx.computeStream());
        int handles = w.fake.liveObjects();
        Attention attention = blas.attention(spec.causal());
        int withHandle = w.fake.liveObjects(); // the cuDNN handle, made by the first cuDNN operation, and the graph
        attention.run(w.ctx.computeStream(), q, k, v, o);
        assertEquals(withHandle + 1, w.fake.liveObjects(), "the variant pack");
        attention.close();
        attention.close();
        assertEquals(handles + 1, w.fake.liveObjects(), "only the cuDNN handle is left");
        assertThrows(IllegalStateException.class, () -> attention.run(w.ctx.computeStream(), q, k, v, o));
        w.close();
        assertEquals(0, w.fake.liveObjects());
        assertEquals(List.of(), w.sim.gpu.violations());
    }

    @Test
    void aCapturedAttentionReplaysAndItsOperandsAreHeldByTheGraph() {
        Blas blas = w.blas();
        DeviceView q = q();
        DeviceView k = kv();
        DeviceView v = kv();
        DeviceView o = q();
        try (Stream s = w.ctx.createStream(); Attention attention = blas.attention(spec)) {
            attention.run(s, q, k, v, o); // the workspace and the variant pack exist before the capture
            long allocations = w.sim.gpu.liveDeviceAllocations();
            StreamCapture capture = s.beginCapture(CaptureMode.GLOBAL);
            assertEquals(Map.of("cudnnBackendExecute", 1, "cuCtxGetCurrent", 1), callsOf(() -> attention.run(s, q, k, v,
                    o)), "the captured run");
            try (Graph graph = capture.end()) {
                assertEquals(allocations, w.sim.gpu.liveDeviceAllocations(), "the capture allocated");
                q.buffer().close();
                w.ctx.reap();
                assertEquals(List.of(), w.sim.gpu.danglingGraphUses(), "the graph names a freed operand");
                try (GraphExec exec = graph.instantiate()) {
                    exec.launch(s);
                    exec.launch(s);
                }
            }
            s.synchronize();
        }
        w.close();
        assertEquals(List.of(), w.sim.gpu.violations());
    }

    /**
     * An attention closed on one thread while another runs it: T1 is held inside its
     * {@code cudnnBackendExecute}; T2's close must wait (asserted: it is seen waiting, and no
     * descriptor was destroyed while cuDNN had them), and destroys them once T1's call returned.
     * Without the attention's monitor the close destroys the plan under the call.
     */
    @Test
    void anAttentionClosedWhileAnotherThreadRunsItDestroysItsDescriptorsAfterTheCall() {
        Blas blas = w.blas();
        DeviceView q = q();
        DeviceView k = kv();
        DeviceView v = kv();
        DeviceView o = q();
        try (Stream s = w.ctx.createStream()) {
            Attention attention = blas.attention(spec);
            attention.run(s, q, k, v, o);
            FakeBlasApi.Pause inExecute = w.fake.pauseIn("cudnnBackendExecute");
            Background<Void> t1 = Background.run("T1", () -> attention.run(s, q, k, v, o));
            inExecute.awaitArrival();
            Background<Void> t2 = Background.run("T2", attention::close);
            assertFalse(t2.awaitFinishedOrWaiting(), "T2's close finished while T1 was inside cudnnBackendExecute");
            assertEquals(0, w.fake.calls("cudnnBackendDestroyDescriptor"), "a descriptor destroyed under the call");
            inExecute.release();
            assertNull(t1.joinFailure());
            assertNull(t2.joinFailure());
            assertTrue(w.fake.calls("cudnnBackendDestroyDescriptor") > 0);
            assertEquals(0, w.fake.liveDescriptors(Cudnn.CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR()));
            assertEquals(2, w.fake.calls("cudnnBackendExecute"));
        }
        w.close();
    }
}
