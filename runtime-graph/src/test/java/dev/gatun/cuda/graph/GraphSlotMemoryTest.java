package dev.gatun.cuda.graph;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.GraphUpdateResult;
import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.testing.Simulated;
import java.util.List;
import org.junit.jupiter.api.Test;
import java.util.Map;

/**
 * A slot whose capture allocates (a graph allocation, see runtime-core's README): the slot keeps
 * the graph's one executable; a re-capture, which allocates at new addresses, is instantiated
 * anew instead of updated in place, and the old executable's allocations are freed once closed.
 */
class GraphSlotMemoryTest {

    private static final int N = 4;

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();
    private final Stream stream = ctx.createStream();
    private final GraphLifecycles graphs = new GraphLifecycles();
    private final GraphSlot slot = graphs.registerGroup("session").slot("decode");

    /** Captures into the slot: out = allocate; fill out with value. */
    private DeviceBuffer captureFill(boolean recapture, int value) {
        if (recapture) {
            slot.beginRecapture(0, stream, CaptureMode.THREAD_LOCAL);
        } else {
            slot.beginCapture(stream, CaptureMode.THREAD_LOCAL);
        }
        DeviceBuffer out = stream.allocate(4L * N);
        stream.fill(out.asInts(), value);
        slot.endCapture();
        return out;
    }

    private static int[] read(DeviceBuffer b) {
        int[] out = new int[N];
        b.asInts().copyTo(out);
        return out;
    }

    @Test
    void aRecaptureThatAllocatesIsInstantiatedAnewAndTheOldAllocationsAreFreed() {
        DeviceBuffer first = captureFill(false, 7);
        assertTrue(first.isGraphAllocation());
        slot.replay(stream);
        slot.replay(stream); // each launch frees the previous one's allocation first
        assertArrayEquals(new int[] {7, 7, 7, 7}, read(first));

        DeviceBuffer second = captureFill(true, 9);
        assertNotEquals(first.address(), second.address(), "a new graph allocates at addresses of its own");
        assertEquals(1, slot.counters().reinstantiations(), "not updated in place");
        assertEquals(Map.of(GraphUpdateResult.MEMORY_NODES, 1L), slot.updateRefusals());
        assertEquals(0, slot.counters().updatesInPlace());
        assertFalse(slot.hasSpare(), "an executable of a graph with memory nodes is not kept as the spare");
        slot.replay(stream);
        assertArrayEquals(new int[] {9, 9, 9, 9}, read(second));
        assertArrayEquals(new int[] {7, 7, 7, 7}, read(first), "the old graph's allocation outlives its executable");

        first.close();
        ctx.reap();
        assertEquals(1, sim.gpu.backedGraphAllocations(), "first is freed once its executable is gone; second stays");
        slot.reset();
        second.close();
        graphs.retireAll();
        stream.close();
        ctx.close();
        assertEquals(0, sim.gpu.backedGraphAllocations());
        assertEquals(0, ctx.diagnostics().graphAllocationCounters().liveAllocations());
        assertEquals(List.of(), sim.gpu.violations());
    }
}
