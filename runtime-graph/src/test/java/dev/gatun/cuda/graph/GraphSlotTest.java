package dev.gatun.cuda.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.graph.FakeGraphBackend.FakeDriverException;
import dev.gatun.cuda.graph.FakeGraphBackend.Op;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class GraphSlotTest {

    private static final String STREAM = "stream-1";

    private final FakeGraphBackend backend = new FakeGraphBackend();
    private final CollectingRetirement retirement = new CollectingRetirement();
    private final GraphLifecycles<String> graphs = new GraphLifecycles<>(backend, retirement);
    private final GraphOwner<String> owner = graphs.registerOwner("session-1");
    private final GraphSlot<String> slot = owner.slot("decode");

    @AfterEach
    void nothingMisused() {
        assertEquals(List.of(), backend.violations());
    }

    private void capture(GraphSlot<String> target, int topology, int label) {
        target.beginCapture(STREAM, CaptureMode.THREAD_LOCAL);
        backend.nextCapture(topology, label);
        target.endCapture();
    }

    private void recapture(int index, int topology, int label) {
        slot.beginRecapture(index, STREAM, CaptureMode.THREAD_LOCAL);
        backend.nextCapture(topology, label);
        slot.endCapture();
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
        slot.replay(STREAM);
        assertEquals(List.of(10, 20, 30), backend.takeLaunches());
        slot.replaySegment(1, STREAM);
        assertEquals(List.of(20), backend.takeLaunches());
        assertEquals(new GraphCounts(3, 2, 4, 0, 0, 0, 0), slot.counts());
    }

    @Test
    void slotsOfOneOwnerAreIndependentAndLookedUpByName() {
        GraphSlot<String> prefill = owner.slot("prefill");
        capture(slot, 1, 10);
        capture(prefill, 1, 99);

        assertSame(slot, owner.slot("decode"));
        prefill.replay(STREAM);
        assertEquals(List.of(99), backend.takeLaunches());
        assertEquals(1, slot.segmentCount());
    }

    @Test
    void abortReturnsAnIdleSlotToIdleAndLeavesNothing() {
        slot.beginCapture(STREAM, CaptureMode.GLOBAL);
        assertEquals(SlotPhase.CAPTURING, slot.phase());
        slot.abortCapture();

        assertEquals(SlotPhase.IDLE, slot.phase());
        assertFalse(backend.capturing(STREAM));
        assertEquals(0, backend.liveGraphs());
        assertEquals(1, slot.counts().aborts());
        assertEquals(0, retirement.received());
    }

    @Test
    void abortOnAReadySlotKeepsItsSegments() {
        capture(slot, 1, 10);
        slot.beginCapture(STREAM, CaptureMode.GLOBAL);
        slot.replay(STREAM);
        slot.abortCapture();

        assertEquals(SlotPhase.READY, slot.phase());
        assertEquals(1, slot.segmentCount());
        assertEquals(1, backend.liveGraphs());
        assertEquals(1, backend.liveExecs());
        slot.replay(STREAM);
        assertEquals(List.of(10, 10), backend.takeLaunches());
    }

    @Test
    void abortOfAnInvalidatedCaptureRestoresTheSlotWithoutThrowing() {
        capture(slot, 1, 10);
        slot.beginCapture(STREAM, CaptureMode.GLOBAL);
        backend.failOn(Op.END, 0);
        slot.abortCapture();

        assertEquals(SlotPhase.READY, slot.phase());
        assertEquals(1, backend.liveGraphs());
        assertFalse(backend.capturing(STREAM));
    }

    @Test
    void resetIsRefusedWhileCapturingAndDropsNothing() {
        capture(slot, 1, 10);
        slot.beginCapture(STREAM, CaptureMode.GLOBAL);

        GraphStateException refused = assertThrows(GraphStateException.class, slot::reset);
        assertEquals(SlotPhase.CAPTURING, refused.phase());
        assertTrue(refused.getMessage().contains("end or abort the capture first"), refused.getMessage());
        assertEquals(1, slot.segmentCount());
        assertEquals(0, slot.counts().resets());

        slot.abortCapture();
        assertTrue(slot.reset());
        assertFalse(slot.reset());
        assertEquals(2, slot.counts().resets());
    }

    @Test
    void resetHandsExecutablesToRetirementInsteadOfDestroyingThem() {
        capture(slot, 1, 10);
        capture(slot, 2, 20);
        assertTrue(slot.reset());

        assertEquals(SlotPhase.IDLE, slot.phase());
        assertFalse(slot.hasExecutable());
        assertEquals(2, backend.liveExecs(), "a launched exec must wait for retirement");
        List<RetiredSegment> handed = retirement.pending();
        assertEquals(List.of("owner 'session-1' slot 'decode' segment 0", "owner 'session-1' slot 'decode' segment 1"),
                handed.stream().map(RetiredSegment::identity).toList());

        retirement.completeAll();
        assertEquals(0, backend.liveExecs());
        assertEquals(0, backend.liveGraphs());
        assertTrue(handed.get(0).destroyed());
    }

    @Test
    void replayingNothingIsRefused() {
        GraphStateException refused = assertThrows(GraphStateException.class, () -> slot.replay(STREAM));
        assertEquals(SlotPhase.IDLE, refused.phase());
        assertThrows(GraphStateException.class, () -> slot.replaySegment(0, STREAM));
        assertEquals(List.of(), backend.takeLaunches());
    }

    @Test
    void aBadSegmentIndexNamesTheCount() {
        capture(slot, 1, 10);
        capture(slot, 2, 20);

        IndexOutOfBoundsException high = assertThrows(IndexOutOfBoundsException.class,
                () -> slot.replaySegment(2, STREAM));
        assertTrue(high.getMessage().contains("no segment 2; the slot holds 2 segment(s)"), high.getMessage());
        assertThrows(IndexOutOfBoundsException.class, () -> slot.replaySegment(-1, STREAM));
        IndexOutOfBoundsException recapture = assertThrows(IndexOutOfBoundsException.class,
                () -> slot.beginRecapture(5, STREAM, CaptureMode.GLOBAL));
        assertTrue(recapture.getMessage().contains("holds 2 segment(s)"), recapture.getMessage());
        assertFalse(backend.capturing(STREAM));
        assertEquals(SlotPhase.READY, slot.phase());
        assertEquals(List.of(), backend.takeLaunches());
    }

    @Test
    void phaseMisuseIsRefused() {
        assertEquals(SlotPhase.IDLE, assertThrows(GraphStateException.class, slot::endCapture).phase());
        assertThrows(GraphStateException.class, slot::abortCapture);
        slot.beginCapture(STREAM, CaptureMode.GLOBAL);
        assertThrows(GraphStateException.class, () -> slot.beginCapture("stream-2", CaptureMode.GLOBAL));
        assertFalse(backend.capturing("stream-2"));
        assertThrows(IllegalArgumentException.class, () -> owner.slot(" "));
        assertThrows(IllegalArgumentException.class, () -> graphs.registerOwner(""));
    }

    @Test
    void recaptureWithTheSameTopologyUpdatesTheExecutableInPlace() {
        capture(slot, 7, 10);
        capture(slot, 8, 20);
        recapture(0, 7, 11);

        assertEquals(new GraphCounts(3, 0, 0, 1, 0, 0, 0), slot.counts());
        assertEquals(2, backend.liveExecs());
        slot.replay(STREAM);
        assertEquals(List.of(11, 20), backend.takeLaunches());
        // The replaced graph is the one the executable was instantiated from: it lives on with it.
        assertEquals(List.of(), retirement.pending());
        assertEquals(3, backend.liveGraphs());
        assertEquals(2, backend.liveExecs());
    }

    @Test
    void repeatedInPlaceUpdatesDropTheGraphsInBetweenAndKeepTheExecutablesOrigin() {
        capture(slot, 7, 10);
        recapture(0, 7, 11);
        recapture(0, 7, 12);
        recapture(0, 7, 13);

        slot.replay(STREAM);
        assertEquals(List.of(13), backend.takeLaunches());
        List<RetiredSegment> handed = retirement.pending();
        assertEquals(2, handed.size(), "the graphs of labels 11 and 12");
        for (RetiredSegment r : handed) {
            assertEquals(MemorySegment.NULL, r.exec());
            assertEquals(MemorySegment.NULL, r.origin());
        }
        retirement.completeAll();
        assertEquals(2, backend.liveGraphs(), "the origin and the graph last captured");
        assertEquals(1, backend.liveExecs());

        assertTrue(slot.reset());
        RetiredSegment whole = retirement.pending().get(0);
        assertNotEquals(0, whole.exec().address());
        assertNotEquals(0, whole.origin().address());
        retirement.completeAll();
        assertTrue(whole.destroyed());
        assertEquals(0, backend.liveGraphs());
        assertEquals(0, backend.liveExecs());
    }

    @Test
    void anUpdatedSegmentWhoseOriginFailsToBeDestroyedRetriesOnlyThat() {
        capture(slot, 7, 10);
        recapture(0, 7, 11);
        slot.reset();
        RetiredSegment handed = retirement.pending().get(0);
        backend.failOn(Op.DESTROY_GRAPH, 1); // the graph last captured goes, the origin does not

        assertThrows(FakeDriverException.class, handed::destroy);
        assertEquals(0, backend.liveExecs());
        assertEquals(1, backend.liveGraphs());
        assertEquals(MemorySegment.NULL, handed.graph());
        assertFalse(handed.destroyed());
        handed.destroy();
        assertTrue(handed.destroyed());
        assertEquals(0, backend.liveGraphs());
    }

    @Test
    void recaptureWithAnotherTopologyReinstantiatesAndRetiresTheOldExecutable() {
        capture(slot, 7, 10);
        recapture(0, 9, 12);

        assertEquals(new GraphCounts(2, 0, 0, 0, 1, 0, 0), slot.counts());
        slot.replay(STREAM);
        assertEquals(List.of(12), backend.takeLaunches());
        List<RetiredSegment> handed = retirement.pending();
        assertEquals(1, handed.size());
        assertNotEquals(0, handed.get(0).exec().address());
        assertEquals(2, backend.liveExecs(), "the old exec waits for retirement");
        retirement.completeAll();
        assertEquals(1, backend.liveExecs());
        assertEquals(1, backend.liveGraphs());
    }

    @ParameterizedTest
    @EnumSource(value = Op.class, names = {"BEGIN", "END", "INSTANTIATE", "UPLOAD"})
    void aFailedAppendLeavesTheSlotAsBeforeAndLeaksNothing(Op failing) {
        capture(slot, 1, 10);
        backend.failOn(failing, 0);

        GraphCaptureException failure = assertThrows(GraphCaptureException.class, () -> capture(slot, 2, 20));
        assertEquals(failing, assertInstanceOf(FakeDriverException.class, failure.getCause()).op);
        assertUnchangedAfterFailure();
    }

    @ParameterizedTest
    @EnumSource(value = Op.class, names = {"BEGIN", "END", "UPDATE", "INSTANTIATE", "UPLOAD"})
    void aFailedRecaptureLeavesTheSlotAsBeforeAndLeaksNothing(Op failing) {
        capture(slot, 1, 10);
        backend.failOn(failing, 0);

        // A new topology, so that the re-capture reaches instantiate and upload.
        GraphCaptureException failure = assertThrows(GraphCaptureException.class, () -> recapture(0, 2, 20));
        assertEquals(failing, assertInstanceOf(FakeDriverException.class, failure.getCause()).op);
        assertUnchangedAfterFailure();
    }

    private void assertUnchangedAfterFailure() {
        assertEquals(SlotPhase.READY, slot.phase());
        assertEquals(1, slot.segmentCount());
        assertEquals(1, slot.counts().captures());
        assertFalse(backend.capturing(STREAM));
        slot.replay(STREAM);
        assertEquals(List.of(10), backend.takeLaunches());
        retirement.completeAll();
        assertEquals(1, backend.liveGraphs());
        assertEquals(1, backend.liveExecs());
    }

    @Test
    void aFailedUploadHandsTheNewExecutableToRetirementRatherThanDestroyingIt() {
        backend.failOn(Op.UPLOAD, 0);
        assertThrows(GraphCaptureException.class, () -> capture(slot, 1, 10));

        assertEquals(1, backend.liveExecs(), "an upload that failed may still be on the stream");
        assertEquals(1, retirement.pending().size());
        retirement.completeAll();
        assertEquals(0, backend.liveExecs());
        assertEquals(0, backend.liveGraphs());
    }

    @Test
    void aGraphThatCannotBeDestroyedDirectlyGoesToRetirementAndTheFirstErrorIsKept() {
        backend.failOn(Op.INSTANTIATE, 0);
        backend.failOn(Op.DESTROY_GRAPH, 0);

        GraphCaptureException failure = assertThrows(GraphCaptureException.class, () -> capture(slot, 1, 10));
        assertEquals(Op.INSTANTIATE, ((FakeDriverException) failure.getCause()).op);
        assertEquals(1, retirement.pending().size());
        retirement.completeAll();
        assertEquals(0, backend.liveGraphs());
        assertEquals(SlotPhase.IDLE, slot.phase());
    }

    @Test
    void aRetiredSegmentWhoseDestroyFailedRetriesOnlyWhatIsLeft() {
        capture(slot, 1, 10);
        slot.reset();
        RetiredSegment handed = retirement.pending().get(0);
        backend.failOn(Op.DESTROY_GRAPH, 0);

        assertThrows(FakeDriverException.class, handed::destroy);
        assertEquals(0, backend.liveExecs());
        assertEquals(1, backend.liveGraphs());
        assertFalse(handed.destroyed());
        handed.destroy();
        assertTrue(handed.destroyed());
        assertEquals(0, backend.liveGraphs());
    }

    @Test
    void aFailedLaunchNamesTheSegmentAndCountsOnlyWhatLaunched() {
        capture(slot, 1, 10);
        capture(slot, 2, 20);
        capture(slot, 3, 30);
        backend.failOn(Op.LAUNCH, 1);

        GraphReplayException failure = assertThrows(GraphReplayException.class, () -> slot.replay(STREAM));
        assertEquals(1, failure.segment());
        assertEquals(List.of(10), backend.takeLaunches());
        assertEquals(0, slot.counts().replays());
        assertEquals(1, slot.counts().segmentLaunches());
        slot.replay(STREAM);
        assertEquals(List.of(10, 20, 30), backend.takeLaunches());
    }

    @Test
    void retiringAnOwnerDropsEverySlotAtOnce() {
        GraphSlot<String> prefill = owner.slot("prefill");
        capture(slot, 1, 10);
        capture(slot, 2, 20);
        capture(prefill, 1, 30);
        slot.replay(STREAM);
        GraphCounts before = graphs.totals();

        owner.retire();

        assertTrue(owner.isRetired());
        assertEquals(SlotPhase.RETIRED, slot.phase());
        assertEquals(SlotPhase.RETIRED, prefill.phase());
        assertEquals(3, retirement.pending().size());
        assertEquals(SlotPhase.RETIRED, assertThrows(GraphStateException.class, () -> slot.replay(STREAM)).phase());
        assertThrows(GraphStateException.class, () -> prefill.beginCapture(STREAM, CaptureMode.GLOBAL));
        assertThrows(GraphStateException.class, slot::reset);
        assertThrows(GraphStateException.class, () -> owner.slot("decode"));
        assertThrows(GraphStateException.class, () -> owner.slot("new"));
        owner.retire();
        assertEquals(3, retirement.pending().size(), "retiring twice drops nothing more");
        assertEquals(before, graphs.totals(), "a retired owner's counts stay in the totals");
        assertEquals(0, graphs.liveOwners());
        retirement.completeAll();
        assertEquals(0, backend.liveExecs());
        assertEquals(0, backend.liveGraphs());
    }

    @Test
    void retiringAnOwnerIsRefusedWhileOneOfItsSlotsCaptures() {
        GraphSlot<String> prefill = owner.slot("prefill");
        capture(slot, 1, 10);
        prefill.beginCapture("stream-2", CaptureMode.GLOBAL);

        GraphStateException refused = assertThrows(GraphStateException.class, owner::retire);
        assertTrue(refused.getMessage().contains("'prefill' is capturing"), refused.getMessage());
        assertFalse(owner.isRetired());
        assertEquals(SlotPhase.READY, slot.phase());
        assertEquals(0, retirement.received());
        assertEquals(1, graphs.liveOwners());

        prefill.abortCapture();
        owner.retire();
        assertEquals(1, retirement.received());
    }

    @Test
    void totalsSumEverySlotOfEveryOwner() {
        GraphOwner<String> other = graphs.registerOwner("session-2");
        capture(slot, 1, 10);
        capture(other.slot("decode"), 1, 20);
        slot.replay(STREAM);
        other.slot("decode").replay(STREAM);
        other.slot("decode").replay(STREAM);

        assertEquals(new GraphCounts(2, 3, 3, 0, 0, 0, 0), graphs.totals());
        assertEquals(2, graphs.liveOwners());
    }

    @Test
    void aThrowingRetirementStillReceivesEverySegmentAndTheSlotStaysReset() {
        List<RetiredSegment> received = new ArrayList<>();
        GraphLifecycles<String> failing = new GraphLifecycles<>(backend, segment -> {
            received.add(segment);
            throw new IllegalStateException("queue closed " + received.size());
        });
        GraphSlot<String> target = failing.registerOwner("session-3").slot("decode");
        capture(target, 1, 10);
        capture(target, 2, 20);

        IllegalStateException thrown = assertThrows(IllegalStateException.class, target::reset);
        assertEquals("queue closed 1", thrown.getMessage());
        assertEquals(1, thrown.getSuppressed().length);
        assertEquals(2, received.size());
        assertEquals(SlotPhase.IDLE, target.phase());
    }
}
