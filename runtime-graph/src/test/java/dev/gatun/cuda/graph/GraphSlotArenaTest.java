package dev.gatun.cuda.graph;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.gatun.cuda.CaptureArena;
import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.GraphUpdateResult;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.testing.Simulated;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A slot whose captures allocate from a capture arena: no memory nodes, so a re-capture of the
 * same shape updates the segment in place at the same addresses; a re-capture outside the arena
 * is instantiated anew, refused for ARENA_CHANGED.
 */
class GraphSlotArenaTest {

    private static final int N = 4;

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();
    private final Stream stream = ctx.createStream();
    private final GraphLifecycles graphs = new GraphLifecycles();
    private final GraphSlot slot = graphs.registerGroup("session").slot("decode");

    /** Fills a fresh allocation with {@code value}, in the capture open on the slot. */
    private DeviceBuffer fill(int value) {
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
    void aRecaptureIntoTheArenaUpdatesInPlaceAtTheSameAddressAndOneOutsideIsInstantiated() {
        CaptureArena arena = CaptureArena.reserve(ctx, 4L << 20);
        arena.ensure(4096);
        slot.beginCapture(stream, CaptureMode.THREAD_LOCAL, arena);
        DeviceBuffer first = fill(7);
        assertFalse(first.isGraphAllocation(), "an arena range, not an allocation node");
        assertEquals(arena.baseAddress(), first.address());
        slot.replay(stream);
        assertArrayEquals(new int[] {7, 7, 7, 7}, read(first));

        slot.beginRecapture(0, stream, CaptureMode.THREAD_LOCAL, arena);
        DeviceBuffer second = fill(9);
        assertEquals(first.address(), second.address(), "the same shape, the same address");
        assertEquals(1, slot.counters().updatesInPlace());
        slot.replay(stream);
        assertArrayEquals(new int[] {9, 9, 9, 9}, read(second));

        DeviceBuffer third = ctx.allocate(4L * N); // no allocation in the capture: no memory nodes either
        slot.beginRecapture(0, stream, CaptureMode.THREAD_LOCAL);
        stream.fill(third.asInts(), 11);
        slot.endCapture();
        assertEquals(Map.of(GraphUpdateResult.ARENA_CHANGED, 1L), slot.updateRefusals());
        assertEquals(1, slot.counters().reinstantiations());
        slot.replay(stream);
        assertArrayEquals(new int[] {11, 11, 11, 11}, read(third));

        first.close();
        second.close();
        third.close();
        slot.reset();
        graphs.retireAll();
        arena.close();
        stream.close();
        ctx.close();
        assertEquals(0, sim.gpu.liveReservations(), "the arena's range freed");
        assertEquals(List.of(), sim.gpu.violations());
    }
}
