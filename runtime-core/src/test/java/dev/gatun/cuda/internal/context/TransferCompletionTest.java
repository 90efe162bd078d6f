package dev.gatun.cuda.internal.context;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.gatun.cuda.TransferState;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class TransferCompletionTest {

    private static final int UNKNOWN = 999;
    private static final int RECORD_FAILED = 1;
    private static final int COPY_FAILED = 700;

    @Test
    void aSuccessfulSubmissionIsFencedAndCompletesThroughItsOwnEvent() {
        TransferCompletion c = new TransferCompletion();
        assertEquals(0, c.submit(() -> 0, () -> 0));
        assertEquals(TransferState.EVENT_RECORDED, c.state());
        assertEquals(0, c.await(() -> 0, () -> fail("a recorded fence is never re-recorded")));
        assertEquals(TransferState.COMPLETE, c.state());
        assertEquals(0, c.await(() -> fail("complete: nothing to wait for"), () -> fail("complete")));
    }

    @Test
    void aFailedTransferIsStillFencedAndReportsItsOwnError() {
        TransferCompletion c = new TransferCompletion();
        assertEquals(COPY_FAILED, c.submit(() -> COPY_FAILED, () -> 0));
        assertTrue(c.transferFailed());
        assertEquals(TransferState.EVENT_RECORDED, c.state(), "the failed copy may have queued work: it is fenced anyway");
    }

    @Test
    void aFailedRecordIsRepairedWithoutErasingItsError() {
        TransferCompletion c = new TransferCompletion();
        AtomicInteger attempts = new AtomicInteger();
        int r = c.submit(() -> 0, () -> attempts.incrementAndGet() == 1 ? RECORD_FAILED : 0);
        assertEquals(RECORD_FAILED, r, "the operation failed even though the retry fenced it");
        assertFalse(c.transferFailed());
        assertEquals(2, attempts.get());
        assertEquals(TransferState.EVENT_RECORDED, c.state());
        assertEquals(0, c.await(() -> 0, () -> fail("already fenced")));
    }

    @Test
    void theTransferErrorWinsOverARecordThatFailsTwice() {
        TransferCompletion c = new TransferCompletion();
        assertEquals(COPY_FAILED, c.submit(() -> COPY_FAILED, () -> RECORD_FAILED));
        assertTrue(c.transferFailed());
        assertEquals(TransferState.UNFENCED, c.state());
    }

    @Test
    void anUnwindingSubmissionKeepsTheOriginalThrowableAndStaysUnfencedWhenBothRecordsThrow() {
        TransferCompletion c = new TransferCompletion();
        IllegalStateException original = new IllegalStateException("original submission failure");
        IllegalStateException thrown = assertThrows(IllegalStateException.class,
                () -> c.submit(() -> { throw original; }, () -> { throw new IllegalArgumentException("cleanup"); }));
        assertSame(original, thrown);
        assertEquals(1, thrown.getSuppressed().length, "the cleanup failure is attached, never thrown instead");
        assertEquals(TransferState.UNFENCED, c.state());
        assertEquals(UNKNOWN, c.await(() -> fail("no valid fence to wait on"), () -> UNKNOWN));
        assertEquals(TransferState.UNFENCED, c.state());
    }

    @Test
    void anUnwindingTransferCannotMarkItsBytesComplete() {
        TransferCompletion c = new TransferCompletion();
        assertThrows(IllegalStateException.class, () -> c.submit(() -> { throw new IllegalStateException("copy"); }, () -> 0));
        assertEquals(TransferState.EVENT_RECORDED, c.state(), "fenced, but only completion of that fence makes it complete");
    }

    @Test
    void anUncertainTransferMustCompleteThroughAFreshFenceBeforeRelease() {
        for (boolean copyFails : new boolean[] {false, true}) {
            TransferCompletion c = new TransferCompletion();
            assertTrue(c.submit(() -> copyFails ? COPY_FAILED : 0, () -> RECORD_FAILED) != 0);
            assertEquals(TransferState.UNFENCED, c.state());
            assertEquals(RECORD_FAILED, c.await(() -> fail("no recorded fence"), () -> RECORD_FAILED));
            assertEquals(TransferState.UNFENCED, c.state(), "still unproven");
            AtomicInteger refences = new AtomicInteger();
            assertEquals(0, c.await(() -> 0, () -> { refences.incrementAndGet(); return 0; }));
            assertEquals(1, refences.get());
            assertEquals(TransferState.COMPLETE, c.state());
        }
    }

    @Test
    void aNextTransferFollowsTheLastOnTheGpuOnlyFromAnotherStreamAndNeverWaitsOnTheHost() {
        TransferCompletion c = new TransferCompletion();
        assertEquals(0, c.prepareNext(false, () -> fail("complete: nothing to fence")));
        assertFalse(c.nextWaitsForFence(false), "complete: nothing to follow");
        assertEquals(0, c.submit(() -> 0, () -> 0));
        assertEquals(0, c.prepareNext(true, () -> fail("recorded: never re-recorded")));
        assertEquals(0, c.prepareNext(false, () -> fail("recorded: never re-recorded")));
        assertFalse(c.nextWaitsForFence(true), "same stream: stream order follows the last transfer");
        assertTrue(c.nextWaitsForFence(false), "another stream: a GPU wait on the recorded fence");
        assertEquals(TransferState.EVENT_RECORDED, c.state(), "ordering the next transfer does not complete the last one");
    }

    @Test
    void anUnfencedTransferIsFencedAgainBeforeATransferOnAnotherStreamFollowsIt() {
        TransferCompletion c = new TransferCompletion();
        assertEquals(RECORD_FAILED, c.submit(() -> 0, () -> RECORD_FAILED));
        assertEquals(TransferState.UNFENCED, c.state());
        assertEquals(0, c.prepareNext(true, () -> fail("same stream: the next fence covers both")));
        assertFalse(c.nextWaitsForFence(true));
        assertThrows(IllegalStateException.class, () -> c.nextWaitsForFence(false),
                "an unfenced transfer elsewhere cannot be followed without a fresh fence");
        assertEquals(UNKNOWN, c.prepareNext(false, () -> UNKNOWN), "the fresh fence's own error");
        assertEquals(TransferState.UNFENCED, c.state(), "still unproven");
        AtomicInteger refences = new AtomicInteger();
        assertEquals(0, c.prepareNext(false, () -> { refences.incrementAndGet(); return 0; }));
        assertEquals(1, refences.get());
        assertEquals(TransferState.EVENT_RECORDED, c.state());
        assertTrue(c.nextWaitsForFence(false), "the new stream waits for the fresh fence");
    }

    @Test
    void aRecordedTransferRetriesOnlyItsOwnEvent() {
        TransferCompletion c = new TransferCompletion();
        assertEquals(0, c.submit(() -> 0, () -> 0));
        assertEquals(Evidence.PENDING, c.await(() -> Evidence.PENDING, () -> fail("recorded event exists")));
        assertEquals(TransferState.EVENT_RECORDED, c.state());
        assertEquals(0, c.await(() -> 0, () -> fail("recorded event exists")));
        assertEquals(TransferState.COMPLETE, c.state());
    }
}
