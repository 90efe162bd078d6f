package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.FaultPlan;
import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A pipeline through one pinned buffer (NVIDIA's asyncAPI sample: upload from it, a kernel,
 * download back into it) leaves the host free: a new transfer through the buffer is ordered after
 * the last one on the GPU (stream order on the same stream, a wait on the last fence on another),
 * and only host access to the bytes waits. The simulated GPU is held busy, so a host wait shows
 * ({@link FakeDriverApi#blockingHostWaits()}) and queued work stays queued until something waits
 * for it.
 */
class PinnedPipelineTest {

    private static final int POISON = 0xDEAD;
    private static final int UNKNOWN = 999;
    private static final int INVALID_HANDLE = CudaDriver.CUDA_ERROR_INVALID_HANDLE();
    private static final int INVALID_VALUE = CudaDriver.CUDA_ERROR_INVALID_VALUE();

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();

    /** What {@code operation} asked of the driver, by function. */
    private Map<String, Integer> callsOf(Runnable operation) {
        sim.faults.clear();
        sim.faults.countCalls();
        operation.run();
        Map<String, Integer> calls = sim.faults.counts();
        sim.faults.clear();
        return calls;
    }

    private static int read(PinnedBuffer b, int word) {
        return b.segment().getAtIndex(ValueLayout.JAVA_INT, word);
    }

    /** The host bytes as they are now, without waiting (what the DMAs have written so far). */
    private static int peek(PinnedBuffer b, int word) {
        return b.memory().view().getAtIndex(ValueLayout.JAVA_INT, word);
    }

    private int queued(Stream s) {
        return sim.gpu.queuedOperations(s.state().handle());
    }

    private DeviceBuffer word(int value) {
        DeviceBuffer b = ctx.allocate(Integer.BYTES);
        b.asInts().copyFrom(new int[] {value});
        return b;
    }

    /** asyncAPI's shape: upload, add, download into the same buffer, events around them; the host counts until the last event is done. */
    @Test
    void anUploadKernelDownloadPipelineThroughOneBufferNeverBlocksTheHost() {
        int n = AddKernelFixture.N;
        try (AddKernelFixture f = new AddKernelFixture(new FakeDriverApi())) {
            Simulated sim = f.sim;
            int[] input = new int[n];
            int[] expected = new int[n];
            for (int i = 0; i < n; i++) {
                input[i] = 3 * i + 1;
                expected[i] = input[i] + 26;
            }
            try (PinnedBuffer a = f.ctx.allocatePinned((long) n * Integer.BYTES);
                    DeviceBuffer d = f.ctx.allocate((long) n * Integer.BYTES);
                    Event start = f.ctx.createEvent(); Event stop = f.ctx.createEvent()) {
                a.segment().copyFrom(MemorySegment.ofArray(input));
                KernelLaunch add = f.launch(d, 26);
                HeldStreams.hold(sim, f.stream); // the GPU is busy with earlier work
                start.record(f.stream);
                f.stream.upload(d.bytes(), a, 0);
                add.launch(f.stream);
                f.stream.download(a, 0, d.bytes());
                stop.record(f.stream);
                assertEquals(List.of(), sim.gpu.blockingHostWaits(), "queueing the pipeline waited for the GPU");
                assertEquals("EVENT_RECORDED", a.transferState());
                int iterations = 0;
                while (!stop.query()) {
                    iterations++;
                    if (iterations == 5) {
                        HeldStreams.release(sim, f.stream); // the GPU gets to the pipeline
                    }
                }
                assertEquals(5, iterations, "the host ran until the GPU finished, and no longer");
                assertArrayEquals(expected, a.segment().toArray(ValueLayout.JAVA_INT));
                assertEquals(List.of(), sim.gpu.blockingHostWaits(), "the read found the pipeline done");
            }
        }
    }

    /**
     * A transfer on stream B after one on stream A through the same bytes: B waits for A's fence on
     * the GPU, so B's fence, the one host access waits for, covers A's transfer too.
     */
    @Test
    void aTransferOnAnotherStreamFollowsTheLastOnTheGpuAndItsFenceCoversBoth() {
        try (PinnedBuffer p = ctx.allocatePinned(Integer.BYTES); DeviceBuffer one = word(1); DeviceBuffer two = word(2);
                Stream a = ctx.createStream(); Stream b = ctx.createStream()) {
            p.segment().set(ValueLayout.JAVA_INT, 0, POISON);
            HeldStreams.hold(sim, a);
            HeldStreams.hold(sim, b);
            a.download(p, 0, one.bytes());
            assertEquals(Map.of("cuStreamWaitEvent", 1, "cuMemcpyDtoHAsync_v2", 1, "cuEventRecord", 1),
                    callsOf(() -> b.download(p, 0, two.bytes())), "one wait on A's fence, the copy and B's fence");
            assertEquals(List.of(), sim.gpu.blockingHostWaits());
            HeldStreams.release(sim, b);
            assertEquals(3, queued(b), "B's copy waits on the GPU for A's, which the busy GPU has not run");
            assertEquals(POISON, peek(p, 0));
            assertEquals(2, read(p, 0), "the read waits for B's fence, which follows A's copy and then B's");
            assertEquals(List.of("cuEventSynchronize"), sim.gpu.blockingHostWaits(), "one host wait, for the last fence");
            assertEquals(0, queued(a), "A's copy ran before B's: B's fence covered it");
            HeldStreams.release(sim, a);
            assertEquals(2, peek(p, 0), "A's copy did not land after B's");
            assertEquals("COMPLETE", p.transferState());
        }
        assertEquals(List.of(), sim.gpu.violations());
    }

    /** The same, through three streams taking turns: each waits for the fence before it, so the last fence covers all three. */
    @Test
    void theLastFenceOfAChainOfTransfersOnThreeStreamsCoversEveryOne() {
        try (PinnedBuffer p = ctx.allocatePinned(3L * Integer.BYTES); DeviceBuffer one = word(1); DeviceBuffer two = word(2);
                DeviceBuffer three = word(3); Stream a = ctx.createStream(); Stream b = ctx.createStream();
                Stream c = ctx.createStream()) {
            Stream[] streams = {a, b, c};
            DeviceBuffer[] sources = {one, two, three};
            for (Stream s : streams) {
                HeldStreams.hold(sim, s);
            }
            sim.faults.countCalls();
            for (int i = 0; i < 3; i++) {
                streams[i].download(p, (long) i * Integer.BYTES, sources[i].bytes());
            }
            assertEquals(2, sim.faults.calls("cuStreamWaitEvent"), "B waits for A's fence, C for B's");
            sim.faults.clear();
            assertEquals(List.of(), sim.gpu.blockingHostWaits());
            assertArrayEquals(new int[] {1, 2, 3}, p.segment().toArray(ValueLayout.JAVA_INT));
            for (Stream s : streams) {
                assertEquals(0, queued(s), "the one wait for C's fence ran every stream's copy");
            }
            assertEquals(List.of("cuEventSynchronize"), sim.gpu.blockingHostWaits());
        }
        assertEquals(List.of(), sim.gpu.violations());
    }

    /** A fence that failed twice on A is no evidence: before B follows A's copy, a fresh fence is recorded on A. */
    @Test
    void aTransferAfterAnUnfencedOneOnAnotherStreamFencesThatOneAgainFirst() {
        try (PinnedBuffer p = ctx.allocatePinned(Integer.BYTES); DeviceBuffer one = word(1); DeviceBuffer two = word(2);
                Stream a = ctx.createStream(); Stream b = ctx.createStream()) {
            HeldStreams.hold(sim, a);
            HeldStreams.hold(sim, b);
            sim.faults.inject("cuEventRecord", UNKNOWN, FaultPlan.Mode.REPLACE, 0, 2);
            assertThrows(CudaException.class, () -> a.download(p, 0, one.bytes()));
            assertEquals("UNFENCED", p.transferState());
            assertEquals(Map.of("cuEventRecord", 2, "cuStreamWaitEvent", 1, "cuMemcpyDtoHAsync_v2", 1),
                    callsOf(() -> b.download(p, 0, two.bytes())), "a fresh fence on A, B's wait on it, the copy, B's fence");
            assertEquals(List.of(), sim.gpu.blockingHostWaits(), "no host wait: the fresh fence is waited for on the GPU");
            assertEquals("EVENT_RECORDED", p.transferState());
            assertEquals(2, read(p, 0));
            assertEquals(0, queued(a), "B's fence covered A's copy through the fresh fence");
        }
        assertEquals(List.of(), sim.gpu.violations());
    }

    /** On the same stream an unfenced transfer needs no fresh fence: stream order puts the next one after it, whose fence covers both. */
    @Test
    void aTransferAfterAnUnfencedOneOnTheSameStreamIsOrderedByTheStreamAlone() {
        try (PinnedBuffer p = ctx.allocatePinned(2L * Integer.BYTES); DeviceBuffer one = word(1); DeviceBuffer two = word(2);
                Stream a = ctx.createStream()) {
            HeldStreams.hold(sim, a);
            sim.faults.inject("cuEventRecord", UNKNOWN, FaultPlan.Mode.REPLACE, 0, 2);
            assertThrows(CudaException.class, () -> a.download(p, 0, one.bytes()));
            assertEquals("UNFENCED", p.transferState());
            assertEquals(Map.of("cuMemcpyDtoHAsync_v2", 1, "cuEventRecord", 1),
                    callsOf(() -> a.download(p, Integer.BYTES, two.bytes())));
            assertEquals("EVENT_RECORDED", p.transferState());
            assertArrayEquals(new int[] {1, 2}, p.segment().toArray(ValueLayout.JAVA_INT));
            assertEquals(0, queued(a));
        }
        assertEquals(List.of(), sim.gpu.violations());
    }

    /** The fresh fence cannot be recorded: the next transfer is refused with that error, nothing is queued, and it stays unfenced. */
    @Test
    void aFreshFenceThatFailsRefusesTheNextTransferAndQueuesNothing() {
        try (PinnedBuffer p = ctx.allocatePinned(Integer.BYTES); DeviceBuffer one = word(1); DeviceBuffer two = word(2);
                Stream a = ctx.createStream(); Stream b = ctx.createStream()) {
            HeldStreams.hold(sim, a);
            HeldStreams.hold(sim, b);
            sim.faults.inject("cuEventRecord", UNKNOWN, FaultPlan.Mode.REPLACE, 0, 2);
            assertThrows(CudaException.class, () -> a.download(p, 0, one.bytes()));
            sim.faults.clear();
            sim.faults.replaceOnce("cuEventRecord", INVALID_HANDLE);
            sim.faults.countCalls();
            CudaException e = assertThrows(CudaException.class, () -> b.download(p, 0, two.bytes()));
            assertTrue(e.operation().startsWith("cuEventRecord (fencing the last transfer through PinnedBuffer#"),
                    e.operation());
            assertEquals("CUDA_ERROR_INVALID_HANDLE", e.resultName());
            assertEquals(0, sim.faults.calls("cuMemcpyDtoHAsync_v2") + sim.faults.calls("cuStreamWaitEvent"));
            sim.faults.clear();
            assertEquals(0, queued(b), "nothing was queued on B");
            assertEquals("UNFENCED", p.transferState());
            b.download(p, 0, two.bytes()); // the record works again: fenced on A, then followed
            assertEquals(2, read(p, 0));
            assertEquals(0, queued(a));
        }
        assertEquals(List.of(), sim.gpu.violations());
    }

    /** The GPU wait on the last fence fails: the transfer is refused, nothing else is queued, and host access still waits for A's copy. */
    @Test
    void aFailedWaitOnTheLastFenceQueuesNothingAndLeavesTheLastTransferTracked() {
        try (PinnedBuffer p = ctx.allocatePinned(Integer.BYTES); DeviceBuffer one = word(1); DeviceBuffer two = word(2);
                Stream a = ctx.createStream(); Stream b = ctx.createStream()) {
            HeldStreams.hold(sim, a);
            a.download(p, 0, one.bytes());
            sim.faults.replaceOnce("cuStreamWaitEvent", INVALID_HANDLE);
            sim.faults.countCalls();
            CudaException e = assertThrows(CudaException.class, () -> b.download(p, 0, two.bytes()));
            assertEquals("cuStreamWaitEvent", e.operation());
            assertEquals(0, sim.faults.calls("cuMemcpyDtoHAsync_v2") + sim.faults.calls("cuEventRecord"));
            sim.faults.clear();
            assertEquals("EVENT_RECORDED", p.transferState(), "still A's copy, fenced on A");
            assertEquals(1, read(p, 0), "the read waited for A's copy");
            assertEquals(List.of("cuEventSynchronize"), sim.gpu.blockingHostWaits());
        }
        assertEquals(List.of(), sim.gpu.violations());
    }

    /**
     * B's copy fails and so do both records of its fence: the copy's error is the one reported, the
     * buffer is UNFENCED on B, and the read fences B again (A's older fence proves nothing about B's
     * copy), which covers A's copy as well.
     */
    @Test
    void aFailedCopyOnAnotherStreamReportsItsOwnErrorAndTheReadFencesItsStreamAgain() {
        try (PinnedBuffer p = ctx.allocatePinned(Integer.BYTES); DeviceBuffer one = word(1); DeviceBuffer two = word(2);
                Stream a = ctx.createStream(); Stream b = ctx.createStream()) {
            HeldStreams.hold(sim, a);
            HeldStreams.hold(sim, b);
            a.download(p, 0, one.bytes());
            sim.faults.inject("cuMemcpyDtoHAsync_v2", INVALID_VALUE, FaultPlan.Mode.OVERRIDE, 0, 1);
            sim.faults.inject("cuEventRecord", UNKNOWN, FaultPlan.Mode.REPLACE, 0, 2);
            CudaException e = assertThrows(CudaException.class, () -> b.download(p, 0, two.bytes()));
            assertEquals("cuMemcpyDtoHAsync", e.operation(), "the copy's own error, not the fence's");
            assertEquals("CUDA_ERROR_INVALID_VALUE", e.resultName());
            sim.faults.clear();
            assertEquals("UNFENCED", p.transferState());
            assertEquals(Map.of("cuEventRecord", 1, "cuEventSynchronize", 1), callsOf(() -> assertEquals(2, read(p, 0))),
                    "a fresh fence on B, then the host waits for it");
            assertEquals(0, queued(a), "B's fresh fence follows B's wait on A's fence");
            assertEquals(0, queued(b));
        }
        assertEquals(List.of(), sim.gpu.violations());
    }

    /**
     * A transfer captured into a graph is a copy node, which runs at each launch on whichever
     * stream: nothing on the GPU would order it after the last transfer, so the host waits for that
     * first, and records nothing into the capture.
     */
    @Test
    void aTransferCapturedWhileTheLastOneRunsWaitsForItOnTheHostFirst() {
        try (PinnedBuffer p = ctx.allocatePinned(Integer.BYTES); DeviceBuffer one = word(1); DeviceBuffer seven = word(7);
                Stream a = ctx.createStream(); Stream s = ctx.createStream()) {
            HeldStreams.hold(sim, a);
            a.download(p, 0, one.bytes());
            Graph graph;
            try (StreamCapture capture = s.beginCapture(CaptureMode.THREAD_LOCAL)) {
                Map<String, Integer> calls = callsOf(() -> s.download(p, 0, seven.bytes()));
                assertEquals(Map.of("cuEventSynchronize", 1, "cuMemcpyDtoHAsync_v2", 1), calls,
                        "a host wait for A's copy, then the copy node; no fence into the capture");
                graph = capture.end();
            }
            assertEquals(List.of("cuEventSynchronize"), sim.gpu.blockingHostWaits());
            assertEquals(0, queued(a));
            assertEquals("COMPLETE", p.transferState());
            try (graph; GraphExec exec = graph.instantiate()) {
                exec.launch(s);
                assertEquals(7, read(p, 0));
            }
        }
        ctx.reap();
        assertEquals(List.of(), sim.gpu.violations());
    }

    /** A batch of copies through a pinned buffer follows its last transfer on the GPU, as a single transfer does. */
    @Test
    void aCopyBatchFollowsTheLastTransferThroughItsPinnedBufferOnTheGpu() {
        try (PinnedBuffer p = ctx.allocatePinned(Integer.BYTES); PinnedBuffer q = ctx.allocatePinned(Integer.BYTES);
                DeviceBuffer one = word(1); DeviceBuffer two = word(2); DeviceBuffer three = word(3);
                Stream a = ctx.createStream(); Stream b = ctx.createStream(); CopyBatch batch = CopyBatch.create(2)) {
            HeldStreams.hold(sim, a);
            HeldStreams.hold(sim, b);
            a.download(p, 0, one.bytes());
            b.download(q, 0, three.bytes()); // q's last transfer is on b itself: no wait for it
            Map<String, Integer> calls = callsOf(() -> batch.download(p, 0, two.bytes()).download(q, 0, one.bytes())
                    .submit(b));
            assertEquals(1, calls.get("cuStreamWaitEvent"), "one wait, for p's fence on A: " + calls);
            assertEquals(2, calls.get("cuEventRecord"), "p's and q's fences after the batch: " + calls);
            assertEquals(List.of(), sim.gpu.blockingHostWaits(), "submitting the batch waited for the GPU");
            assertEquals(2, read(p, 0));
            assertEquals(0, queued(a));
            assertEquals(1, read(q, 0));
        }
        assertEquals(List.of(), sim.gpu.violations());
    }

    /** A batch through a buffer a graph copies into, launched on another stream, follows those launches on the GPU too. */
    @Test
    void aCopyBatchFollowsTheGraphLaunchesThatCopyIntoItsPinnedBufferOnTheGpu() {
        try (PinnedBuffer p = ctx.allocatePinned(Integer.BYTES); DeviceBuffer word = ctx.allocate(Integer.BYTES);
                DeviceBuffer seven = word(7); Stream a = ctx.createStream(); Stream b = ctx.createStream();
                CopyBatch batch = CopyBatch.create(1); Graph graph = ctx.createGraph()) {
            graph.addDownload(p, 0, word.bytes(), graph.addFill(word.asInts(), 42));
            p.segment().set(ValueLayout.JAVA_INT, 0, POISON);
            try (GraphExec exec = graph.instantiate()) {
                HeldStreams.hold(sim, a);
                exec.launch(a); // writes 42 into p once the GPU gets to it
                batch.download(p, 0, seven.bytes()).submit(b); // writes 7: after the replay, not before
                assertEquals(List.of(), sim.gpu.blockingHostWaits(), "submitting the batch waited for the launch");
                assertEquals(POISON, peek(p, 0), "the batch ran before the replay queued before it");
                HeldStreams.release(sim, a);
                assertEquals(7, read(p, 0));
            }
        }
        ctx.reap();
        assertEquals(List.of(), sim.gpu.violations());
    }
}
