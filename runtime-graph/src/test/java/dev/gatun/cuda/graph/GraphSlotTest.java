package dev.gatun.cuda.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertThrowsExactly;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CaptureInvalidatedException;
import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.graph.SimulatedGraphs.Op;
import dev.gatun.cuda.testing.LogCapture;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.slf4j.event.Level;

/** One slot's lifecycle on the simulated driver, with driver failures injected at every step. */
class GraphSlotTest {

    private static final String STREAM = "stream-1";

    private final SimulatedGraphs gpu = new SimulatedGraphs();
    private final GraphLifecycles graphs = new GraphLifecycles();
    private final SlotGroup group = graphs.registerGroup("session-1");
    private final GraphSlot slot = group.slot("decode");

    @BeforeEach
    void forgetEarlierLogs() {
        LogCapture.clear();
    }

    @AfterEach
    void nothingMisusedOrLeft() {
        graphs.retireAll();
        gpu.close();
    }

    private Stream stream() {
        return gpu.stream(STREAM);
    }

    private void capture(GraphSlot target, int topology, int label) {
        gpu.capture(target, STREAM, topology, label);
    }

    private void recapture(int index, int topology, int label) {
        gpu.recapture(slot, index, STREAM, topology, label);
    }

    private long liveExecutableOwners() {
        return gpu.ctx.diagnostics().liveOwners(OwnerKind.GRAPH_EXEC);
    }

    /**
     * The replay_1 / issue_replay twin's operation: C's one cuGraphLaunch. (What the slot adds
     * above it, two atomic updates of its launch count and two of its counters, makes no driver
     * call: runtime-bench/README.md, "Where each row's time above C goes".)
     */
    @Test
    void aWarmedReplayOfOneSegmentIsOneCuGraphLaunch() {
        capture(slot, 1, 10);
        slot.replay(stream());
        assertEquals(List.of(10), gpu.takeLaunches());
        assertEquals(Map.of("cuGraphLaunch", 1), gpu.sim.faults.callsOf(() -> slot.replay(stream())));
        assertEquals(List.of(10), gpu.takeLaunches());
    }

    @Test
    void segmentsReplayInCaptureOrderAndOneByOne() {
        assertEquals(SlotPhase.IDLE, slot.phase());
        capture(slot, 1, 10);
        capture(slot, 2, 20);
        capture(slot, 3, 30);

        assertEquals(SlotPhase.READY, slot.phase());
        assertEquals(3, slot.segmentCount());
        assertTrue(slot.hasExecutable());
        slot.replay(stream());
        assertEquals(List.of(10, 20, 30), gpu.takeLaunches());
        slot.replaySegment(1, stream());
        assertEquals(List.of(20), gpu.takeLaunches());
        assertEquals(new GraphCounters(3, 2, 4, 0, 0, 0, 0, 0), slot.counters());
    }

    @Test
    void slotsOfOneOwnerAreIndependentAndLookedUpByName() {
        GraphSlot prefill = group.slot("prefill");
        capture(slot, 1, 10);
        capture(prefill, 1, 99);

        assertSame(slot, group.slot("decode"));
        prefill.replay(stream());
        assertEquals(List.of(99), gpu.takeLaunches());
        assertEquals(1, slot.segmentCount());
    }

    @Test
    void abortReturnsAnIdleSlotToIdleAndLeavesNothing() {
        slot.beginCapture(stream(), CaptureMode.GLOBAL);
        assertEquals(SlotPhase.CAPTURING, slot.phase());
        gpu.record(STREAM, 1, 10);
        slot.abortCapture();

        assertEquals(SlotPhase.IDLE, slot.phase());
        assertFalse(gpu.capturing(STREAM));
        assertEquals(0, gpu.liveGraphs());
        assertEquals(0, gpu.liveExecs());
        assertEquals(1, slot.counters().aborts());
        assertEquals(List.of(), gpu.takeLaunches(), "what the capture recorded never ran");
    }

    @Test
    void abortOnAReadySlotKeepsItsSegments() {
        capture(slot, 1, 10);
        slot.beginCapture(stream(), CaptureMode.GLOBAL);
        slot.replay(gpu.stream("elsewhere")); // replays go on while the slot captures
        slot.abortCapture();

        assertEquals(SlotPhase.READY, slot.phase());
        assertEquals(1, slot.segmentCount());
        assertEquals(1, gpu.liveGraphs());
        assertEquals(1, gpu.liveExecs());
        slot.replay(stream());
        assertEquals(List.of(10, 10), gpu.takeLaunches());
    }

    @Test
    void abortOfAnInvalidatedCaptureRestoresTheSlotWithoutThrowing() {
        capture(slot, 1, 10);
        slot.beginCapture(stream(), CaptureMode.GLOBAL);
        gpu.failNext(Op.END);
        gpu.abortCapture(slot, STREAM);

        assertEquals(SlotPhase.READY, slot.phase());
        assertEquals(1, gpu.liveGraphs());
        assertFalse(gpu.capturing(STREAM));
    }

    @Test
    void resetIsRefusedWhileCapturingAndDropsNothing() {
        capture(slot, 1, 10);
        slot.beginCapture(stream(), CaptureMode.GLOBAL);

        IllegalStateException refused = assertThrows(IllegalStateException.class, slot::reset);
        assertEquals(SlotPhase.CAPTURING, slot.phase());
        assertTrue(refused.getMessage().contains("end or abort the capture first"), refused.getMessage());
        assertEquals(1, slot.segmentCount());
        assertEquals(0, slot.counters().resets());
        assertEquals(1, liveExecutableOwners());

        slot.abortCapture();
        assertTrue(slot.reset());
        assertFalse(slot.reset());
        assertEquals(2, slot.counters().resets());
    }

    @Test
    void resetHandsExecutablesToRetirementInsteadOfDestroyingThem() {
        capture(slot, 1, 10);
        capture(slot, 2, 20);
        gpu.holdAll();
        slot.replay(stream()); // still running when the slot is reset
        assertTrue(slot.reset());

        assertEquals(SlotPhase.IDLE, slot.phase());
        assertFalse(slot.hasExecutable());
        assertEquals(0, liveExecutableOwners(), "closed for Java at once");
        gpu.ctx.reap();
        assertEquals(2, gpu.liveExecs(), "a launched exec must wait for retirement");
        assertEquals(2, gpu.pendingRetirements());

        gpu.releaseAll();
        assertEquals(List.of(10, 20), gpu.takeLaunches());
        gpu.ctx.reap();
        assertEquals(0, gpu.liveExecs());
        assertEquals(0, gpu.liveGraphs());
        assertEquals(0, gpu.pendingRetirements());
    }

    @Test
    void replayingNothingIsRefused() {
        IllegalStateException refused = assertThrows(IllegalStateException.class, () -> slot.replay(stream()));
        assertTrue(refused.getMessage().contains("nothing is captured; capture a segment first"), refused.getMessage());
        assertEquals(SlotPhase.IDLE, slot.phase());
        assertThrows(IllegalStateException.class, () -> slot.replaySegment(0, stream()));
        assertEquals(List.of(), gpu.takeLaunches());
    }

    @Test
    void aBadSegmentIndexNamesTheCount() {
        capture(slot, 1, 10);
        capture(slot, 2, 20);

        IndexOutOfBoundsException high = assertThrows(IndexOutOfBoundsException.class,
                () -> slot.replaySegment(2, stream()));
        assertTrue(high.getMessage().contains("no segment 2; the slot holds 2 segment(s)"), high.getMessage());
        assertThrows(IndexOutOfBoundsException.class, () -> slot.replaySegment(-1, stream()));
        IndexOutOfBoundsException recapture = assertThrows(IndexOutOfBoundsException.class,
                () -> slot.beginRecapture(5, stream(), CaptureMode.GLOBAL));
        assertTrue(recapture.getMessage().contains("holds 2 segment(s)"), recapture.getMessage());
        assertFalse(gpu.capturing(STREAM));
        assertEquals(SlotPhase.READY, slot.phase());
        assertEquals(List.of(), gpu.takeLaunches());
    }

    @Test
    void beginningOnAStreamThatAlreadyCapturesIsMisuseNotARuntimeFailure() {
        slot.beginCapture(stream(), CaptureMode.GLOBAL);
        GraphSlot prefill = group.slot("prefill");

        IllegalStateException refused = assertThrowsExactly(IllegalStateException.class,
                () -> prefill.beginCapture(stream(), CaptureMode.THREAD_LOCAL));
        assertTrue(refused.getMessage().contains("is already capturing"), refused.getMessage());
        assertEquals(SlotPhase.IDLE, prefill.phase());
        assertEquals(SlotPhase.CAPTURING, slot.phase());
        slot.abortCapture();
    }

    @Test
    void phaseMisuseIsRefused() {
        IllegalStateException notOpen = assertThrows(IllegalStateException.class, slot::endCapture);
        assertTrue(notOpen.getMessage().contains("no capture is open (phase IDLE)"), notOpen.getMessage());
        assertThrows(IllegalStateException.class, slot::abortCapture);
        slot.beginCapture(stream(), CaptureMode.GLOBAL);
        assertThrows(IllegalStateException.class, () -> slot.beginCapture(gpu.stream("stream-2"), CaptureMode.GLOBAL));
        assertFalse(gpu.capturing("stream-2"));
        assertThrows(IllegalArgumentException.class, () -> group.slot(" "));
        assertThrows(IllegalArgumentException.class, () -> graphs.registerGroup(""));
        slot.abortCapture();
    }

    @Test
    void recaptureWithTheSameTopologyUpdatesTheExecutableInPlace() {
        capture(slot, 7, 10);
        capture(slot, 8, 20);
        recapture(0, 7, 11);

        assertEquals(new GraphCounters(3, 0, 0, 1, 0, 0, 0, 0), slot.counters());
        assertEquals(2, gpu.liveExecs());
        slot.replay(stream());
        assertEquals(List.of(11, 20), gpu.takeLaunches());
        // The replaced graph is the one the executable was instantiated from: it lives on with it.
        assertEquals(0, gpu.pendingRetirements());
        assertEquals(3, gpu.liveGraphs());
        assertEquals(2, gpu.liveExecs());
    }

    @Test
    void repeatedInPlaceUpdatesDropTheGraphsInBetweenAndKeepTheExecutablesOrigin() {
        capture(slot, 7, 10);
        recapture(0, 7, 11);
        recapture(0, 7, 12);
        recapture(0, 7, 13);

        slot.replay(stream());
        assertEquals(List.of(13), gpu.takeLaunches());
        gpu.ctx.reap();
        assertEquals(2, gpu.liveGraphs(), "the origin and the graph last captured; those of labels 11 and 12 are gone");
        assertEquals(1, gpu.liveExecs());

        assertTrue(slot.reset());
        gpu.ctx.reap();
        assertEquals(0, gpu.liveGraphs());
        assertEquals(0, gpu.liveExecs());
    }

    @Test
    void anUpdatedSegmentWhoseOriginFailsToBeDestroyedRetriesOnlyThat() {
        capture(slot, 7, 10);
        recapture(0, 7, 11);
        gpu.failAfter(Op.DESTROY_GRAPH, 1); // the graph last captured goes, the origin does not
        slot.reset();

        assertEquals(0, gpu.liveExecs());
        assertEquals(1, gpu.liveGraphs());
        assertEquals(1, gpu.pendingRetirements());
        assertRetriedFreeLogged("Graph");
        gpu.ctx.reap();
        assertEquals(0, gpu.liveGraphs());
        assertEquals(0, gpu.pendingRetirements());
    }

    @Test
    void recaptureWithAnotherTopologyReinstantiatesAndKeepsTheOldExecutableAsTheSpare() {
        capture(slot, 7, 10);
        gpu.holdAll(); // the old executable's upload is still queued
        recapture(0, 9, 12);

        assertEquals(new GraphCounters(2, 0, 0, 0, 0, 1, 0, 0), slot.counters());
        assertTrue(slot.hasSpare());
        assertEquals(2, liveExecutableOwners(), "the segment's and the spare");
        slot.replay(stream());
        gpu.releaseAll();
        assertEquals(List.of(12), gpu.takeLaunches());
        gpu.ctx.reap();
        assertEquals(2, gpu.liveExecs());

        assertTrue(slot.reset());
        assertFalse(slot.hasSpare());
        assertEquals(0, liveExecutableOwners(), "reset closes the spare too");
        gpu.ctx.reap();
        assertEquals(0, gpu.liveExecs());
        assertEquals(0, gpu.liveGraphs());
    }

    @ParameterizedTest
    @EnumSource(value = Op.class, names = {"BEGIN", "END", "INSTANTIATE", "UPLOAD"})
    void aFailedAppendLeavesTheSlotAsBeforeAndLeaksNothing(Op failing) {
        capture(slot, 1, 10);
        gpu.failNext(failing);

        CudaException failure = assertThrows(CudaException.class, () -> capture(slot, 2, 20));
        SimulatedGraphs.assertFailedIn(failing, failure);
        assertUnchangedAfterFailure();
    }

    @ParameterizedTest
    @EnumSource(value = Op.class, names = {"BEGIN", "END", "UPDATE", "INSTANTIATE", "UPLOAD"})
    void aFailedRecaptureLeavesTheSlotAsBeforeAndLeaksNothing(Op failing) {
        capture(slot, 1, 10);
        gpu.failNext(failing);

        // A new topology, so that the re-capture reaches instantiate and upload.
        CudaException failure = assertThrows(CudaException.class, () -> recapture(0, 2, 20));
        SimulatedGraphs.assertFailedIn(failing, failure);
        assertUnchangedAfterFailure();
    }

    @Test
    void anInvalidatedCaptureIsReportedAsSuch() {
        gpu.failNext(Op.END);
        CaptureInvalidatedException failure = assertThrows(CaptureInvalidatedException.class, () -> capture(slot, 1, 10));
        assertEquals("CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", failure.resultName());
        assertEquals(SlotPhase.IDLE, slot.phase());
    }

    private void assertUnchangedAfterFailure() {
        assertEquals(SlotPhase.READY, slot.phase());
        assertEquals(1, slot.segmentCount());
        assertEquals(1, slot.counters().captures());
        assertFalse(gpu.capturing(STREAM));
        slot.replay(stream());
        assertEquals(List.of(10), gpu.takeLaunches());
        gpu.ctx.reap();
        assertEquals(1, gpu.liveGraphs());
        assertEquals(1, gpu.liveExecs());
        assertEquals(1, liveExecutableOwners());
    }

    @Test
    void aFailedUploadHandsTheNewExecutableToRetirementRatherThanDestroyingIt() {
        stream();
        gpu.holdAll();
        gpu.failNext(Op.UPLOAD);
        assertThrows(CudaException.class, () -> capture(slot, 1, 10));

        assertEquals(1, gpu.liveExecs(), "an upload that failed may still be on the stream");
        assertEquals(1, gpu.pendingRetirements());
        gpu.releaseAll();
        gpu.ctx.reap();
        assertEquals(0, gpu.liveExecs());
        assertEquals(0, gpu.liveGraphs());
    }

    @Test
    void aGraphThatCannotBeDestroyedDirectlyGoesToRetirementAndTheFirstErrorIsKept() {
        gpu.failNext(Op.INSTANTIATE);
        gpu.failNext(Op.DESTROY_GRAPH);

        CudaException failure = assertThrows(CudaException.class, () -> capture(slot, 1, 10));
        SimulatedGraphs.assertFailedIn(Op.INSTANTIATE, failure);
        assertEquals(1, gpu.pendingRetirements());
        assertRetriedFreeLogged("Graph");
        gpu.ctx.reap();
        assertEquals(0, gpu.liveGraphs());
        assertEquals(SlotPhase.IDLE, slot.phase());
    }

    @Test
    void aRetiredSegmentWhoseDestroyFailedRetriesOnlyWhatIsLeft() {
        capture(slot, 1, 10);
        gpu.failNext(Op.DESTROY_GRAPH);
        slot.reset();

        assertEquals(0, gpu.liveExecs());
        assertEquals(1, gpu.liveGraphs());
        assertRetriedFreeLogged("Graph");
        gpu.ctx.reap();
        assertEquals(0, gpu.liveGraphs());
        assertEquals(0, gpu.pendingRetirements());
    }

    @Test
    void aFailedLaunchStopsTheReplayAndCountsOnlyWhatLaunched() {
        capture(slot, 1, 10);
        capture(slot, 2, 20);
        capture(slot, 3, 30);
        gpu.failAfter(Op.LAUNCH, 1);

        CudaException failure = assertThrows(CudaException.class, () -> slot.replay(stream()));
        SimulatedGraphs.assertFailedIn(Op.LAUNCH, failure);
        assertEquals(List.of(10), gpu.takeLaunches(), "segment 0 ran, segment 1 failed, segment 2 was not launched");
        assertEquals(0, slot.counters().replays());
        assertEquals(1, slot.counters().segmentLaunches());
        slot.replay(stream());
        assertEquals(List.of(10, 20, 30), gpu.takeLaunches());
    }

    @Test
    void retiringAnOwnerDropsEverySlotAtOnce() {
        GraphSlot prefill = group.slot("prefill");
        capture(slot, 1, 10);
        capture(slot, 2, 20);
        capture(prefill, 1, 30);
        gpu.holdAll();
        slot.replay(stream());
        GraphCounters before = graphs.counters();

        group.retire();

        assertTrue(group.isRetired());
        assertEquals(SlotPhase.RETIRED, slot.phase());
        assertEquals(SlotPhase.RETIRED, prefill.phase());
        assertEquals(0, liveExecutableOwners());
        assertEquals(3, gpu.pendingRetirements());
        IllegalStateException retired = assertThrows(IllegalStateException.class, () -> slot.replay(stream()));
        assertTrue(retired.getMessage().contains("its group was retired"), retired.getMessage());
        assertThrows(IllegalStateException.class, () -> prefill.beginCapture(stream(), CaptureMode.GLOBAL));
        assertThrows(IllegalStateException.class, slot::reset);
        assertThrows(IllegalStateException.class, () -> group.slot("decode"));
        assertThrows(IllegalStateException.class, () -> group.slot("new"));
        group.retire();
        assertEquals(3, gpu.pendingRetirements(), "retiring twice drops nothing more");
        assertEquals(before, graphs.counters(), "a retired group's counts stay in the totals");
        assertEquals(0, graphs.liveGroups());
        gpu.releaseAll();
        gpu.ctx.reap();
        assertEquals(0, gpu.liveExecs());
        assertEquals(0, gpu.liveGraphs());
    }

    @Test
    void retiringAGroupIsRefusedWhileOneOfItsSlotsCaptures() {
        GraphSlot prefill = group.slot("prefill");
        capture(slot, 1, 10);
        prefill.beginCapture(gpu.stream("stream-2"), CaptureMode.GLOBAL);

        IllegalStateException refused = assertThrows(IllegalStateException.class, group::retire);
        assertTrue(refused.getMessage().contains("'prefill' is capturing"), refused.getMessage());
        assertFalse(group.isRetired());
        assertEquals(SlotPhase.READY, slot.phase());
        assertEquals(1, liveExecutableOwners());
        assertEquals(1, graphs.liveGroups());

        prefill.abortCapture();
        group.retire();
        assertEquals(0, liveExecutableOwners());
    }

    @Test
    void totalsSumEverySlotOfEveryOwner() {
        SlotGroup other = graphs.registerGroup("session-2");
        capture(slot, 1, 10);
        capture(other.slot("decode"), 1, 20);
        slot.replay(stream());
        other.slot("decode").replay(stream());
        other.slot("decode").replay(stream());

        assertEquals(new GraphCounters(2, 3, 3, 0, 0, 0, 0, 0), graphs.counters());
        assertEquals(2, graphs.liveGroups());
    }

    @Test
    void aResetWhoseFirstDestroyFailsStillDropsEverySegmentAndRetirementRetries() {
        capture(slot, 1, 10);
        capture(slot, 2, 20);
        gpu.sim.faults.countCalls();
        gpu.failNext(Op.DESTROY_EXEC);

        assertTrue(slot.reset());
        assertEquals(SlotPhase.IDLE, slot.phase());
        assertEquals(0, liveExecutableOwners());
        gpu.ctx.reap();
        assertEquals(3, gpu.sim.faults.calls("cuGraphExecDestroy"), "the failed destroy was retried, once");
        assertRetriedFreeLogged("GraphExec");
        assertEquals(0, gpu.liveExecs());
        assertEquals(0, gpu.liveGraphs());
    }

    /** The retirement queue warned that freeing a {@code kind} (Graph, GraphExec) failed and will be retried. */
    private static void assertRetriedFreeLogged(String kind) {
        // By name: runtime-core does not export its retirement queue's package to this module.
        LogCapture.expect(Level.WARN, "dev.gatun.cuda.internal.context.RetirementQueue", "Freeing " + kind + "#", " failed with ",
                "; will retry at the next reap");
    }
}
