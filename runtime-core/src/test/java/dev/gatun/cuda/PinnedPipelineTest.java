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
import org.junit.jupiter.api.AfterEach;
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
    /** Two words of pinned memory, two device words to download into them (1 and 2), and two streams. */
    private final PinnedBuffer p = ctx.allocatePinned(2L * Integer.BYTES);
    private final DeviceBuffer one = word(1);
    private final DeviceBuffer two = word(2);
    private final Stream a = ctx.createStream();
    private final Stream b = ctx.createStream();

    /** The GPU finishes what a test left queued; nothing was misused. */
    @AfterEach
    void closeAndCheck() {
        HeldStreams.release(sim, a);
        HeldStreams.release(sim, b);
        p.close();
        one.close();
        two.close();
        a.close();
        b.close();
        ctx.reap();
        assertEquals(List.of(), sim.gpu.violations());
    }

    /** The GPU is busy on both streams: their work waits until a host wait (or a release) lets it run. */
    private void busy() {
        HeldStreams.hold(sim, a);
        HeldStreams.hold(sim, b);
    }

    /** Both records of the next fence fail: the next transfer through {@code p} is left UNFENCED (and throws). */
    private void failNextFenceTwice() {
        sim.faults.inject("cuEventRecord", UNKNOWN, FaultPlan.Mode.REPLACE, 0, 2);
    }

    private static int read(PinnedBuffer buffer, int word) {
        return buffer.segment().getAtIndex(ValueLayout.JAVA_INT, word);
    }

    /** The host bytes as they are now, without waiting (what the DMAs have written so far). */
    private static int peek(PinnedBuffer buffer, int word) {
        return buffer.memory().view().getAtIndex(ValueLayout.JAVA_INT, word);
    }

    private int queued(Stream s) {
        return sim.gpu.queuedOperations(s.state().handle());
    }

    private DeviceBuffer word(int value) {
        DeviceBuffer w = ctx.allocate(Integer.BYTES);
        w.asInts().copyFrom(new int[] {value});
        return w;
    }

    /** asyncAPI's shape: upload, add, download into the same buffer, events around them; the host counts until the last event is done. */
    @Test
    void anUploadKernelDownloadPipelineThroughOneBufferNeverBlocksTheHost() {
        int n = AddKernelFixture.N;
        int[] input = new int[n];
        int[] expected = new int[n];
        for (int i = 0; i < n; i++) {
            input[i] = 3 * i + 1;
            expected[i] = input[i] + 26;
        }
        try (AddKernelFixture f = new AddKernelFixture(new FakeDriverApi());
                PinnedBuffer host = f.ctx.allocatePinned((long) n * Integer.BYTES);
                DeviceBuffer d = f.ctx.allocate((long) n * Integer.BYTES);
                Event start = f.ctx.createEvent(); Event stop = f.ctx.createEvent()) {
            host.segment().copyFrom(MemorySegment.ofArray(input));
            KernelLaunch add = f.launch(d, 26);
            HeldStreams.hold(f.sim, f.stream); // the GPU is busy with earlier work
            start.record(f.stream);
            f.stream.upload(d.bytes(), host, 0);
            add.launch(f.stream);
            f.stream.download(host, 0, d.bytes());
            stop.record(f.stream);
            assertEquals(List.of(), f.sim.gpu.blockingHostWaits(), "queueing the pipeline waited for the GPU");
            assertEquals(TransferState.EVENT_RECORDED, host.transferState());
            int iterations = 0;
            while (!stop.query()) {
                iterations++;
                if (iterations == 5) {
                    HeldStreams.release(f.sim, f.stream); // the GPU gets to the pipeline
                }
            }
            assertEquals(5, iterations, "the host ran until the GPU finished, and no longer");
            assertArrayEquals(expected, host.segment().toArray(ValueLayout.JAVA_INT));
            assertEquals(List.of(), f.sim.gpu.blockingHostWaits(), "the read found the pipeline done");
        }
    }

    /**
     * A transfer on stream B after one on stream A through the same bytes: B waits for A's fence on
     * the GPU, so B's fence, the one host access waits for, covers A's transfer too.
     */
    @Test
    void aTransferOnAnotherStreamFollowsTheLastOnTheGpuAndItsFenceCoversBoth() {
        p.segment().set(ValueLayout.JAVA_INT, 0, POISON);
        busy();
        a.download(p, 0, one.bytes());
        assertEquals(Map.of("cuStreamWaitEvent", 1, "cuMemcpyDtoHAsync_v2", 1, "cuEventRecord", 1),
                sim.faults.callsOf(() -> b.download(p, 0, two.bytes())), "one wait on A's fence, the copy and B's fence");
        assertEquals(List.of(), sim.gpu.blockingHostWaits());
        HeldStreams.release(sim, b);
        assertEquals(3, queued(b), "B's copy waits on the GPU for A's, which the busy GPU has not run");
        assertEquals(POISON, peek(p, 0));
        assertEquals(2, read(p, 0), "the read waits for B's fence, which follows A's copy and then B's");
        assertEquals(List.of("cuEventSynchronize"), sim.gpu.blockingHostWaits(), "one host wait, for the last fence");
        assertEquals(0, queued(a), "A's copy ran before B's: B's fence covered it");
        HeldStreams.release(sim, a);
        assertEquals(2, peek(p, 0), "A's copy did not land after B's");
        assertEquals(TransferState.COMPLETE, p.transferState());
    }

    /** The same, through three streams taking turns: each waits for the fence before it, so the last fence covers all three. */
    @Test
    void theLastFenceOfAChainOfTransfersOnThreeStreamsCoversEveryOne() {
        try (PinnedBuffer three = ctx.allocatePinned(3L * Integer.BYTES); DeviceBuffer word3 = word(3);
                Stream c = ctx.createStream()) {
            Stream[] streams = {a, b, c};
            DeviceBuffer[] sources = {one, two, word3};
            busy();
            HeldStreams.hold(sim, c);
            Map<String, Integer> calls = sim.faults.callsOf(() -> {
                for (int i = 0; i < 3; i++) {
                    streams[i].download(three, (long) i * Integer.BYTES, sources[i].bytes());
                }
            });
            assertEquals(2, calls.get("cuStreamWaitEvent"), "B waits for A's fence, C for B's: " + calls);
            assertEquals(List.of(), sim.gpu.blockingHostWaits());
            assertArrayEquals(new int[] {1, 2, 3}, three.segment().toArray(ValueLayout.JAVA_INT));
            for (Stream s : streams) {
                assertEquals(0, queued(s), "the one wait for C's fence ran every stream's copy");
            }
            assertEquals(List.of("cuEventSynchronize"), sim.gpu.blockingHostWaits());
        }
    }

    /** A fence that failed twice on A is no evidence: before B follows A's copy, a fresh fence is recorded on A. */
    @Test
    void aTransferAfterAnUnfencedOneOnAnotherStreamFencesThatOneAgainFirst() {
        busy();
        failNextFenceTwice();
        assertThrows(CudaException.class, () -> a.download(p, 0, one.bytes()));
        assertEquals(TransferState.UNFENCED, p.transferState());
        assertEquals(Map.of("cuEventRecord", 2, "cuStreamWaitEvent", 1, "cuMemcpyDtoHAsync_v2", 1),
                sim.faults.callsOf(() -> b.download(p, 0, two.bytes())), "a fresh fence on A, B's wait on it, the copy, "
                        + "B's fence");
        assertEquals(List.of(), sim.gpu.blockingHostWaits(), "no host wait: the fresh fence is waited for on the GPU");
        assertEquals(TransferState.EVENT_RECORDED, p.transferState());
        assertEquals(2, read(p, 0));
        assertEquals(0, queued(a), "B's fence covered A's copy through the fresh fence");
    }

    /** On the same stream an unfenced transfer needs no fresh fence: stream order puts the next one after it, whose fence covers both. */
    @Test
    void aTransferAfterAnUnfencedOneOnTheSameStreamIsOrderedByTheStreamAlone() {
        busy();
        failNextFenceTwice();
        assertThrows(CudaException.class, () -> a.download(p, 0, one.bytes()));
        assertEquals(TransferState.UNFENCED, p.transferState());
        assertEquals(Map.of("cuMemcpyDtoHAsync_v2", 1, "cuEventRecord", 1),
                sim.faults.callsOf(() -> a.download(p, Integer.BYTES, two.bytes())));
        assertEquals(TransferState.EVENT_RECORDED, p.transferState());
        assertArrayEquals(new int[] {1, 2}, p.segment().toArray(ValueLayout.JAVA_INT));
        assertEquals(0, queued(a));
    }

    /** The fresh fence cannot be recorded: the next transfer is refused with that error, nothing is queued, and it stays unfenced. */
    @Test
    void aFreshFenceThatFailsRefusesTheNextTransferAndQueuesNothing() {
        busy();
        failNextFenceTwice();
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
        assertEquals(TransferState.UNFENCED, p.transferState());
        b.download(p, 0, two.bytes()); // the record works again: fenced on A, then followed
        assertEquals(2, read(p, 0));
        assertEquals(0, queued(a));
    }

    /** The GPU wait on the last fence fails: the transfer is refused, nothing else is queued, and host access still waits for A's copy. */
    @Test
    void aFailedWaitOnTheLastFenceQueuesNothingAndLeavesTheLastTransferTracked() {
        HeldStreams.hold(sim, a);
        a.download(p, 0, one.bytes());
        sim.faults.replaceOnce("cuStreamWaitEvent", INVALID_HANDLE);
        sim.faults.countCalls();
        CudaException e = assertThrows(CudaException.class, () -> b.download(p, 0, two.bytes()));
        assertEquals("cuStreamWaitEvent", e.operation());
        assertEquals(0, sim.faults.calls("cuMemcpyDtoHAsync_v2") + sim.faults.calls("cuEventRecord"));
        sim.faults.clear();
        assertEquals(TransferState.EVENT_RECORDED, p.transferState(), "still A's copy, fenced on A");
        assertEquals(1, read(p, 0), "the read waited for A's copy");
        assertEquals(List.of("cuEventSynchronize"), sim.gpu.blockingHostWaits());
    }

    /**
     * B's copy fails and so do both records of its fence: the copy's error is the one reported, the
     * buffer is UNFENCED on B, and the read fences B again (A's older fence proves nothing about B's
     * copy), which covers A's copy as well.
     */
    @Test
    void aFailedCopyOnAnotherStreamReportsItsOwnErrorAndTheReadFencesItsStreamAgain() {
        busy();
        a.download(p, 0, one.bytes());
        sim.faults.inject("cuMemcpyDtoHAsync_v2", INVALID_VALUE, FaultPlan.Mode.OVERRIDE, 0, 1);
        failNextFenceTwice();
        CudaException e = assertThrows(CudaException.class, () -> b.download(p, 0, two.bytes()));
        assertEquals("cuMemcpyDtoHAsync", e.operation(), "the copy's own error, not the fence's");
        assertEquals("CUDA_ERROR_INVALID_VALUE", e.resultName());
        sim.faults.clear();
        assertEquals(TransferState.UNFENCED, p.transferState());
        assertEquals(Map.of("cuEventRecord", 1, "cuEventSynchronize", 1),
                sim.faults.callsOf(() -> assertEquals(2, read(p, 0))), "a fresh fence on B, then the host waits for it");
        assertEquals(0, queued(a), "B's fresh fence follows B's wait on A's fence");
        assertEquals(0, queued(b));
    }

    /**
     * A transfer captured into a graph is a copy node, which runs at each launch on whichever
     * stream: nothing on the GPU would order it after the last transfer, so the host waits for that
     * first, and records nothing into the capture.
     */
    @Test
    void aTransferCapturedWhileTheLastOneRunsWaitsForItOnTheHostFirst() {
        HeldStreams.hold(sim, a);
        a.download(p, 0, one.bytes());
        Graph graph;
        try (StreamCapture capture = b.beginCapture(CaptureMode.THREAD_LOCAL)) {
            assertEquals(Map.of("cuEventSynchronize", 1, "cuMemcpyDtoHAsync_v2", 1),
                    sim.faults.callsOf(() -> b.download(p, 0, two.bytes())),
                    "a host wait for A's copy, then the copy node; no fence into the capture");
            graph = capture.end();
        }
        assertEquals(List.of("cuEventSynchronize"), sim.gpu.blockingHostWaits());
        assertEquals(0, queued(a));
        assertEquals(TransferState.COMPLETE, p.transferState());
        try (graph; GraphExec exec = graph.instantiate()) {
            exec.launch(b);
            assertEquals(2, read(p, 0));
        }
    }

    /** A batch of copies through a pinned buffer follows its last transfer on the GPU, as a single transfer does. */
    @Test
    void aCopyBatchFollowsTheLastTransferThroughItsPinnedBufferOnTheGpu() {
        try (PinnedBuffer q = ctx.allocatePinned(Integer.BYTES); DeviceBuffer word3 = word(3);
                CopyBatch batch = CopyBatch.create(2)) {
            busy();
            a.download(p, 0, one.bytes());
            b.download(q, 0, word3.bytes()); // q's last transfer is on B itself: no wait for it
            Map<String, Integer> calls = sim.faults.callsOf(() -> batch.download(p, 0, two.bytes())
                    .download(q, 0, one.bytes()).submit(b));
            assertEquals(1, calls.get("cuStreamWaitEvent"), "one wait, for p's fence on A: " + calls);
            assertEquals(2, calls.get("cuEventRecord"), "p's and q's fences after the batch: " + calls);
            assertEquals(List.of(), sim.gpu.blockingHostWaits(), "submitting the batch waited for the GPU");
            assertEquals(2, read(p, 0));
            assertEquals(0, queued(a));
            assertEquals(1, read(q, 0));
        }
    }

    /** A batch through a buffer a graph copies into, launched on another stream, follows those launches on the GPU too. */
    @Test
    void aCopyBatchFollowsTheGraphLaunchesThatCopyIntoItsPinnedBufferOnTheGpu() {
        try (DeviceBuffer word = ctx.allocate(Integer.BYTES); CopyBatch batch = CopyBatch.create(1);
                Graph graph = ctx.createGraph()) {
            graph.addDownload(p, 0, word.bytes(), graph.addFill(word.asInts(), 42));
            p.segment().set(ValueLayout.JAVA_INT, 0, POISON);
            try (GraphExec exec = graph.instantiate()) {
                HeldStreams.hold(sim, a);
                exec.launch(a); // writes 42 into p once the GPU gets to it
                batch.download(p, 0, two.bytes()).submit(b); // writes 2: after the replay, not before
                assertEquals(List.of(), sim.gpu.blockingHostWaits(), "submitting the batch waited for the launch");
                assertEquals(POISON, peek(p, 0), "the batch ran before the replay queued before it");
                HeldStreams.release(sim, a);
                assertEquals(2, read(p, 0));
            }
        }
    }
}
