package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A pinned buffer that graph launches copy to or from: a download captured on a stream (NVIDIA's
 * jacobiCudaGraphs, method 1: captured again every iteration, the sum copied to pinned memory
 * inside the capture), or a copy node added by hand. The capture records no fence event for the
 * buffer (a wait on an event recorded in a capture that has ended is refused, as the driver
 * refuses it), host access waits for the launches of every executable that holds the buffer, and
 * a transfer outside the graph through it is ordered after those launches.
 */
class GraphPinnedTransferTest {

    private static final int POISON = 0xDEAD;

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();
    private final Stream stream = ctx.createStream();

    /** How the graph's copy into the pinned buffer is made. */
    enum Made {
        CAPTURED, BY_HAND
    }

    /** A graph that fills {@code word} with {@code value} and copies it into {@code sum}. */
    private Graph fillAndDownload(Made made, DeviceBuffer word, PinnedBuffer sum, int value) {
        if (made == Made.BY_HAND) {
            Graph g = ctx.createGraph();
            GraphNode fill = g.addFill(word.asInts(), value);
            g.addDownload(sum, 0, word.bytes(), fill);
            return g;
        }
        try (StreamCapture capture = stream.beginCapture(CaptureMode.GLOBAL)) {
            stream.fill(word.asInts(), value);
            stream.download(sum, 0, word.bytes());
            return capture.end();
        }
    }

    private static int read(PinnedBuffer b) {
        return b.segment().get(ValueLayout.JAVA_INT, 0);
    }

    /** The host bytes as they are now, without waiting for anything (what a DMA has written so far). */
    private static int peek(PinnedBuffer b) {
        return b.memory().view().get(ValueLayout.JAVA_INT, 0);
    }

    @Test
    void aDownloadCapturedAgainEveryIterationLeavesTheBufferUsable() {
        try (PinnedBuffer sum = ctx.allocatePinned(Integer.BYTES); DeviceBuffer word = ctx.allocate(Integer.BYTES)) {
            for (int i = 1; i <= 4; i++) {
                try (Graph graph = fillAndDownload(Made.CAPTURED, word, sum, 100 + i); GraphExec exec = graph.instantiate()) {
                    exec.launch(stream);
                    assertEquals(100 + i, read(sum), "iteration " + i);
                }
                assertEquals(TransferState.COMPLETE, sum.transferState(), "a captured transfer leaves the transfer state as it was");
            }
            stream.fill(word.asInts(), 7);
            stream.download(sum, 0, word.bytes()); // a transfer outside any capture, through the same buffer
            assertEquals(7, read(sum));
        }
        ctx.reap();
        assertEquals(List.of(), sim.gpu.violations());
    }

    @ParameterizedTest
    @EnumSource(Made.class)
    void aHostReadRightAfterAReplayReturnsTheReplaysValue(Made made) {
        try (PinnedBuffer sum = ctx.allocatePinned(Integer.BYTES); DeviceBuffer word = ctx.allocate(Integer.BYTES);
                Graph graph = fillAndDownload(made, word, sum, 42); GraphExec exec = graph.instantiate()) {
            sum.segment().set(ValueLayout.JAVA_INT, 0, POISON);
            HeldStreams.hold(sim, stream); // the GPU is busy: the replay is queued, not run
            exec.launch(stream);
            assertEquals(POISON, peek(sum), "the replay waits for the busy GPU");
            assertEquals(42, read(sum), "the read did not wait for the replay queued before it");
            HeldStreams.release(sim, stream);
        }
        ctx.reap();
        assertEquals(List.of(), sim.gpu.violations());
    }

    @ParameterizedTest
    @EnumSource(Made.class)
    void aTransferOnAnotherStreamIsOrderedAfterTheLaunchesQueuedBeforeIt(Made made) {
        try (PinnedBuffer sum = ctx.allocatePinned(Integer.BYTES); DeviceBuffer word = ctx.allocate(Integer.BYTES);
                DeviceBuffer seven = ctx.allocate(Integer.BYTES); Stream other = ctx.createStream();
                Graph graph = fillAndDownload(made, word, sum, 42); GraphExec exec = graph.instantiate()) {
            other.fill(seven.asInts(), 7);
            sum.segment().set(ValueLayout.JAVA_INT, 0, POISON);
            HeldStreams.hold(sim, stream);
            exec.launch(stream); // writes 42 into the buffer once the GPU gets to it
            other.download(sum, 0, seven.bytes()); // writes 7: after the replay, not before
            assertEquals(POISON, peek(sum), "the download on the other stream ran before the replay queued before it");
            HeldStreams.release(sim, stream);
            assertEquals(7, read(sum));
        }
        ctx.reap();
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void aTransferOnTheLaunchStreamQueuesNoWait() {
        try (PinnedBuffer sum = ctx.allocatePinned(Integer.BYTES); DeviceBuffer word = ctx.allocate(Integer.BYTES);
                DeviceBuffer seven = ctx.allocate(Integer.BYTES);
                Graph graph = fillAndDownload(Made.CAPTURED, word, sum, 42); GraphExec exec = graph.instantiate()) {
            stream.fill(seven.asInts(), 7);
            exec.launch(stream);
            sim.faults.countCalls();
            stream.download(sum, 0, seven.bytes()); // stream order puts it after the replay
            assertEquals(0, sim.faults.calls("cuStreamWaitEvent"), sim.faults.counts().toString());
            assertEquals(7, read(sum));
        }
    }

    @Test
    void theBufferWaitsForTheExecutableOnlyUntilItIsDestroyed() {
        try (PinnedBuffer sum = ctx.allocatePinned(Integer.BYTES); DeviceBuffer word = ctx.allocate(Integer.BYTES)) {
            try (Graph graph = fillAndDownload(Made.CAPTURED, word, sum, 42); GraphExec exec = graph.instantiate()) {
                exec.launch(stream);
            }
            stream.synchronize(); // the executable's last launch completed; the reap in it destroyed it
            sim.faults.countCalls();
            assertEquals(42, read(sum));
            assertEquals(0, sim.faults.calls("cuEventSynchronize"), "no executable holds the buffer any more: "
                    + sim.faults.counts());
        }
    }

    @Test
    void aStagedUploadIsRefusedInACaptureBeforeTheDriver() {
        try (DeviceBuffer word = ctx.allocate(Integer.BYTES);
                StreamCapture capture = stream.beginCapture(CaptureMode.THREAD_LOCAL)) {
            sim.faults.countCalls();
            MemorySegment host = MemorySegment.ofArray(new int[] {7});
            CaptureActiveException e = assertThrows(CaptureActiveException.class,
                    () -> stream.upload(word.bytes(), host));
            assertTrue(e.getMessage().contains("staging block"), e.getMessage());
            assertEquals(0, sim.faults.calls("cuMemcpyHtoDAsync_v2") + sim.faults.calls("cuMemHostAlloc"));
            capture.abort();
        }
    }

    @Test
    void aCaptureGatunDidNotBeginIsRefusedBeforeTheDriver() {
        try (PinnedBuffer sum = ctx.allocatePinned(Integer.BYTES); DeviceBuffer word = ctx.allocate(Integer.BYTES)) {
            MemorySegment raw = stream.handle(); // another library begins a capture through it
            assertEquals(0, sim.gpu.api().cuStreamBeginCapture_v2(raw, CudaDriver.CU_STREAM_CAPTURE_MODE_RELAXED()));
            sim.faults.countCalls();
            CaptureActiveException e = assertThrows(CaptureActiveException.class,
                    () -> stream.download(sum, 0, word.bytes()));
            assertTrue(e.getMessage().contains("Gatun did not begin"), e.getMessage());
            assertEquals(0, sim.faults.calls("cuMemcpyDtoHAsync_v2"));
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment graph = arena.allocate(ValueLayout.ADDRESS);
                assertEquals(0, sim.gpu.api().cuStreamEndCapture(raw, graph));
                assertEquals(0, sim.gpu.api().cuGraphDestroy(graph.get(ValueLayout.ADDRESS, 0)));
            }
        }
    }
}
