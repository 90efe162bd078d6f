package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A stream that waits on an event recorded inside a capture joins that capture, as the driver
 * makes it (fork and join): its later work is captured, not run, until it is joined back and the
 * capture ends. The capture must hold what that work uses, as it holds its own stream's work
 * (runtime-core/README.md, "One stream protocol"); the simulated driver models the join.
 */
class CaptureJoinTest {

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();

    private int[] deviceInts(long address) {
        return MemorySegment.ofArray(sim.gpu.deviceBytes(address, 16)).toArray(ValueLayout.JAVA_INT_UNALIGNED);
    }

    @Test
    @Tag("protocol-fix")
    void aStreamThatJoinsACaptureHasItsWorkCapturedAndHeldByTheGraph() {
        Stream origin = ctx.createStream();
        Stream joined = ctx.createStream();
        DeviceBuffer b = ctx.allocate(16);
        b.asInts().copyFrom(new int[4]);
        long address = b.address();
        try (Event fork = ctx.createEvent(); Event back = ctx.createEvent()) {
            StreamCapture capture = origin.beginCapture(CaptureMode.THREAD_LOCAL);
            fork.record(origin);
            joined.waitFor(fork); // joins the capture
            joined.fill(b.asInts(), 5); // captured, not run
            back.record(joined);
            origin.waitFor(back); // joined back
            assertThrows(CaptureActiveException.class, back::onComplete, "a point of the graph has no completion");
            try (Graph graph = capture.end()) {
                assertArrayEquals(new int[4], deviceInts(address), "the joined stream's fill ran instead of being captured");
                b.close();
                ctx.reap();
                assertEquals(List.of(), sim.gpu.danglingGraphUses(), "the graph names the buffer the joined stream's "
                        + "fill writes, but does not hold it");
                try (GraphExec exec = graph.instantiate()) {
                    exec.launch(origin);
                    ctx.synchronize();
                    assertArrayEquals(new int[] {5, 5, 5, 5}, deviceInts(address), "the replay runs the joined work");
                }
            }
        }
        joined.close();
        origin.close();
        ctx.synchronize();
        assertEquals(List.of(), sim.gpu.violations());
        assertEquals(0, sim.gpu.liveDeviceAllocations(), "the buffer is freed once the graph is gone");
    }
}
