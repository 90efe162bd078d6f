package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.gatun.cuda.testing.Simulated;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A relaunch of an executable with memory nodes frees, in its launch stream's order, what the
 * previous launch left allocated, and allocates it again at the same address. Work that another
 * stream queued on that allocation, and that Gatun saw (the allocation lists the stream), must run
 * before that free: the relaunch is ordered after it, as every other free in the library is after
 * the recorded uses (concurrency review 2026-12-03, section 7). The simulated driver flags a free
 * that runs while queued work still uses the allocation.
 */
class GraphMemoryRelaunchOrderingTest {

    private static final int N = 4;

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();
    private final Stream s = ctx.createStream();

    @Test
    @Tag("protocol-fix")
    void aRelaunchIsOrderedAfterAnotherStreamsQueuedUseOfTheAllocationItFreesFirst() {
        Stream x = ctx.createStream();
        int[] seen = new int[N];
        try (StreamCapture capture = s.beginCapture(CaptureMode.THREAD_LOCAL)) {
            DeviceBuffer a = s.allocate(4L * N); // an allocation node: the graph's allocation from now on
            s.fill(a.asInts(), 1);
            try (Graph graph = capture.end(); GraphExec exec = graph.instantiate()) {
                exec.launch(s);
                s.synchronize(); // the allocation is backed and holds 1s
                try (DeviceBuffer copy = ctx.allocate(4L * N)) {
                    HeldStreams.hold(sim, x); // the GPU is busy on x
                    x.copy(copy.asInts(), a.asInts()); // reads the allocation once x runs
                    exec.launch(s); // frees it first (AUTO_FREE_ON_LAUNCH), then allocates it again
                    HeldStreams.release(sim, x);
                    ctx.synchronize();
                    copy.asInts().copyTo(seen);
                }
            }
        }
        x.close();
        s.close();
        ctx.synchronize();
        assertEquals(List.of(), sim.gpu.violations(), "the relaunch freed the graph's allocation while the copy "
                + "another stream queued on it, which Gatun saw, had not run");
        assertArrayEquals(new int[] {1, 1, 1, 1}, seen, "the copy read the allocation before the relaunch reused it");
    }
}
