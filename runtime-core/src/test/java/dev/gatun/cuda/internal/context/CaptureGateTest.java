package dev.gatun.cuda.internal.context;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class CaptureGateTest {

    @Test
    void aSectionWaitsForTheCaptureToEndThenEnters() throws Exception {
        CaptureGate gate = new CaptureGate(Duration.ofMinutes(1));
        CaptureGate.CaptureTicket ticket = gate.enterCapture();
        CountDownLatch trying = new CountDownLatch(1);
        CompletableFuture<Boolean> section = CompletableFuture.supplyAsync(() -> {
            trying.countDown();
            try {
                gate.enterSynchronizing();
                boolean captureStillActive = gate.captureActive();
                gate.exitSynchronizing();
                return captureStillActive;
            } catch (CaptureGate.GateException e) {
                throw new IllegalStateException(e);
            }
        });
        trying.await();
        assertFalse(section.isDone(), "a section cannot get in while the capture is active");
        gate.exitCapture(ticket);
        assertFalse(section.get(30, TimeUnit.SECONDS), "the section entered only after the capture ended");
        assertFalse(gate.captureActive());
    }

    @Test
    void aSectionGivesUpAfterTheBoundWithAReason() throws Exception {
        CaptureGate gate = new CaptureGate(Duration.ZERO);
        CaptureGate.CaptureTicket ticket = CompletableFuture.supplyAsync(() -> {
            try {
                return gate.enterCapture();
            } catch (CaptureGate.GateException e) {
                throw new IllegalStateException(e);
            }
        }).get();
        CaptureGate.GateException e = assertThrows(CaptureGate.GateException.class, gate::enterSynchronizing);
        assertFalse(e.selfCapture());
        assertTrue(e.getMessage().contains("1 global-mode capture(s) still active"), e.getMessage());
        assertEquals(0, gate.sectionsInside());
        gate.exitCapture(ticket);
        gate.enterSynchronizing();
        gate.exitSynchronizing();
    }

    @Test
    void theCapturingThreadFailsFastInsteadOfDeadlocking() throws Exception {
        CaptureGate gate = new CaptureGate(Duration.ofHours(1));
        CaptureGate.CaptureTicket ticket = gate.enterCapture();
        CaptureGate.GateException e = assertThrows(CaptureGate.GateException.class, gate::enterSynchronizing);
        assertTrue(e.selfCapture());
        gate.exitCapture(ticket);
        gate.exitCapture(ticket); // a second exit is a no-op
        assertFalse(gate.captureActive());
    }

    @Test
    void sectionsAreReentrantAndNeverWaitInside() throws Exception {
        CaptureGate gate = new CaptureGate(Duration.ZERO);
        gate.enterSynchronizing();
        gate.enterSynchronizing();
        assertEquals(2, gate.sectionsInside());
        gate.exitSynchronizing();
        gate.exitSynchronizing();
        assertEquals(0, gate.sectionsInside());
        assertThrows(IllegalStateException.class, gate::exitSynchronizing);
    }

    @Test
    void aCaptureWaitsForSectionsAndTryEnterNeverWaits() throws Exception {
        CaptureGate gate = new CaptureGate(Duration.ZERO);
        assertTrue(gate.tryEnterSynchronizing());
        CompletableFuture<String> capture = CompletableFuture.supplyAsync(() -> {
            try {
                gate.enterCapture();
                return "entered";
            } catch (CaptureGate.GateException e) {
                return e.getMessage();
            }
        });
        assertTrue(capture.get().contains("1 synchronizing call(s) still running"), capture.get());
        gate.exitSynchronizing();
        CaptureGate.CaptureTicket ticket = gate.enterCapture();
        CompletableFuture<Boolean> other = CompletableFuture.supplyAsync(gate::tryEnterSynchronizing);
        assertFalse(other.get(), "retirement must defer, not wait, while a capture is active");
        gate.exitCapture(ticket);
        assertTrue(CompletableFuture.supplyAsync(() -> {
            boolean in = gate.tryEnterSynchronizing();
            if (in) {
                gate.exitSynchronizing();
            }
            return in;
        }).get());
    }

    @Test
    void aCaptureCanEndOnAnotherThread() throws Exception {
        CaptureGate gate = new CaptureGate(Duration.ZERO);
        CaptureGate.CaptureTicket ticket = gate.enterCapture();
        CompletableFuture.runAsync(() -> gate.exitCapture(ticket)).get();
        gate.enterSynchronizing(); // the beginning thread is no longer marked as capturing
        gate.exitSynchronizing();
    }
}
