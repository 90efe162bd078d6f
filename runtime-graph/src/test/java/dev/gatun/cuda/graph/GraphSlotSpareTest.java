package dev.gatun.cuda.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.GraphUpdateResult;
import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.graph.SimulatedGraphs.Op;
import dev.gatun.cuda.testing.FlightRecording;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A slot's spare executable on the simulated driver, whose update refuses a changed node count
 * (a capture of topology {@code t} has {@code t + 1} nodes): a re-capture its segment's
 * executable refuses goes to the spare, then to a new instantiation; the replaced executable
 * becomes the spare.
 */
class GraphSlotSpareTest {

    private static final String STREAM = "stream-1";

    private final SimulatedGraphs gpu = new SimulatedGraphs();
    private final GraphLifecycles graphs = new GraphLifecycles();
    private final SlotGroup group = graphs.registerGroup("session-1");
    private final GraphSlot slot = group.slot("decode");

    @AfterEach
    void nothingMisusedOrLeft() {
        graphs.retireAll();
        gpu.close(); // no live graph or executable, no driver misuse
    }

    private void recapture(int topology, int label) {
        gpu.recapture(slot, 0, STREAM, topology, label);
    }

    /** Replays the slot and returns the labels its launches ran. */
    private List<Integer> replay() {
        slot.replay(gpu.stream(STREAM));
        return gpu.takeLaunches();
    }

    private long openExecutables() {
        return gpu.ctx.diagnostics().liveOwners(OwnerKind.GRAPH_EXEC);
    }

    @Test
    void twoAlternatingShapesSettleIntoSpareUpdatesAfterTwoInstantiations() {
        gpu.capture(slot, STREAM, 1, 10);
        recapture(2, 20); // refused: instantiated; the first executable is the spare
        assertTrue(slot.hasSpare());
        assertEquals(List.of(20), replay());
        for (int round = 0; round < 3; round++) {
            recapture(1, 11 + round);
            assertEquals(List.of(11 + round), replay(), "the spare, updated, runs the new capture");
            recapture(2, 21 + round);
            assertEquals(List.of(21 + round), replay());
        }

        assertEquals(new GraphCounters(8, 7, 7, 0, 6, 1, 0, 0), slot.counters());
        assertEquals(Map.of(GraphUpdateResult.TOPOLOGY_CHANGED, 7L), slot.updateRefusals());
        assertEquals(Map.of(), slot.spareUpdateRefusals());
        assertEquals(2, openExecutables(), "the segment's and the spare, nothing more");
        gpu.ctx.reap();
        assertEquals(2, gpu.liveExecs());
        assertEquals(4, gpu.liveGraphs(), "each executable its origin and the graph it runs now");
    }

    @Test
    void aThirdShapeIsInstantiatedAndTheSpareBeforeItIsClosed() {
        gpu.capture(slot, STREAM, 1, 10);
        recapture(2, 20);
        recapture(3, 30); // the segment's executable and the spare both refuse

        assertEquals(List.of(30), replay());
        assertEquals(2, slot.counters().reinstantiations());
        assertEquals(0, slot.counters().spareUpdates());
        assertEquals(Map.of(GraphUpdateResult.TOPOLOGY_CHANGED, 1L), slot.spareUpdateRefusals());
        assertEquals(2, openExecutables(), "the first executable was closed when the second became the spare");
        gpu.ctx.reap();
        assertEquals(2, gpu.liveExecs());

        recapture(2, 22); // the spare now has the second shape
        assertEquals(List.of(22), replay());
        assertEquals(1, slot.counters().spareUpdates());
    }

    @Test
    void resetAndRetirementCloseTheSpare() {
        gpu.capture(slot, STREAM, 1, 10);
        recapture(2, 20);
        assertTrue(slot.reset());
        assertFalse(slot.hasSpare());
        assertEquals(0, openExecutables());

        gpu.capture(slot, STREAM, 1, 10);
        recapture(2, 20);
        group.retire();
        assertFalse(slot.hasSpare());
        assertEquals(0, openExecutables());
        gpu.ctx.reap();
        assertEquals(0, gpu.liveExecs());
        assertEquals(0, gpu.liveGraphs());
    }

    @Test
    void theSpareIsUpdatedWhileItsLastLaunchIsStillQueuedAndThatLaunchRunsWhatItWasLaunchedWith() {
        gpu.capture(slot, STREAM, 1, 10);
        gpu.holdAll(); // the GPU has not run anything yet
        slot.replay(gpu.stream(STREAM));
        recapture(2, 20); // the executable just launched becomes the spare
        recapture(1, 11); // and is updated while that launch is queued
        slot.replay(gpu.stream(STREAM));
        gpu.releaseAll();

        assertEquals(List.of(10, 11), gpu.takeLaunches(), "a queued launch keeps its graph; the next runs the update");
        assertEquals(1, slot.counters().spareUpdates());
    }

    @Test
    void aRefusedSpareIsNotInstalledAndAFailedInstantiationAfterItKeepsTheSlotAndTheSpare() {
        gpu.capture(slot, STREAM, 1, 10);
        recapture(2, 20);
        gpu.failNext(Op.INSTANTIATE);

        CudaException failure = assertThrows(CudaException.class, () -> recapture(3, 30));
        SimulatedGraphs.assertFailedIn(Op.INSTANTIATE, failure);
        assertEquals(List.of(20), replay(), "the segment is unchanged");
        assertTrue(slot.hasSpare());
        recapture(1, 11);
        assertEquals(List.of(11), replay(), "the spare kept its shape and takes it");
        assertEquals(1, slot.counters().spareUpdates());
    }

    @Test
    void aFailedUploadOfTheNewExecutableClosesItAndKeepsTheSpare() {
        gpu.capture(slot, STREAM, 1, 10);
        recapture(2, 20);
        gpu.failNext(Op.UPLOAD);

        CudaException failure = assertThrows(CudaException.class, () -> recapture(3, 30));
        SimulatedGraphs.assertFailedIn(Op.UPLOAD, failure);
        assertEquals(List.of(20), replay());
        assertEquals(2, openExecutables(), "the segment's and the spare; the new one was closed");
        gpu.ctx.reap();
        assertEquals(2, gpu.liveExecs());
        recapture(1, 11);
        assertEquals(List.of(11), replay());
    }

    @Test
    void aDriverFailureOfTheSpareUpdateLeavesTheSlotAsBefore() {
        gpu.capture(slot, STREAM, 1, 10);
        recapture(2, 20);
        gpu.failAfter(Op.UPDATE, 1); // the segment's executable refuses; the spare's update then fails

        CudaException failure = assertThrows(CudaException.class, () -> recapture(1, 11));
        SimulatedGraphs.assertFailedIn(Op.UPDATE, failure);
        assertEquals(List.of(20), replay(), "the segment is unchanged");
        assertTrue(slot.hasSpare());
        assertEquals(new GraphCounters(2, 1, 1, 0, 0, 1, 0, 0), slot.counters(), "the failed re-capture installed nothing");

        recapture(1, 12);
        assertEquals(List.of(12), replay(), "the spare still takes its shape");
        assertEquals(1, slot.counters().spareUpdates());
    }

    @Test
    void eachRecaptureIsRecordedWithItsPathAndReason() {
        List<RecordedEvent> events = FlightRecording.of(() -> {
            gpu.capture(slot, STREAM, 1, 10);
            recapture(1, 11);
            recapture(2, 20);
            recapture(1, 12);
        });
        List<RecordedEvent> installs = FlightRecording.named(events, "dev.gatun.GraphInstall");
        assertEquals(List.of("UPDATED", "INSTANTIATED", "SPARE"), installs.stream().map(e -> e.getString("path")).toList());
        assertEquals(Arrays.asList(null, "TOPOLOGY_CHANGED", "TOPOLOGY_CHANGED"),
                installs.stream().map(e -> e.getString("reason")).toList());
    }
}
