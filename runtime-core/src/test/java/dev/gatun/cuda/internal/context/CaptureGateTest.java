package dev.gatun.cuda.internal.context;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.Interposer;
import dev.gatun.cuda.testing.ScheduleExplorer;
import dev.gatun.cuda.testing.ScheduleExplorer.Step;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
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

    /**
     * Every order (within two preemptions) of a section with a nested one inside it, against a
     * global capture on another thread, switching at the gate's lock-free counts and reads: the
     * nested section never waits nor fails (the capture that counted itself in withdraws), and the
     * capture is never inside while the section is. The steps log where each side is, in the
     * order the explorer lets them run; the check reads the log. Inside, the capture makes a
     * driver call (as a real one makes {@code cuStreamBeginCapture}), so the explorer can switch
     * to the section while the capture is in: without it the capture would be in and out in one
     * step, and a section let in beside it would go unseen (a gate that reads the capture count
     * before counting its section in broke nothing here before that call was added).
     */
    @Test
    void aNestedSectionAndAGlobalCaptureAreNeverInsideAtOnce() {
        ScheduleExplorer.Report report = ScheduleExplorer.of("section with a nested one || global capture")
                .switchingAt(EnumSet.of(SwitchPoint.GATE_SECTION_COUNT, SwitchPoint.CAPTURE_FAST_READ,
                        SwitchPoint.GATE_CAPTURE_COUNT, SwitchPoint.GATE_SECTIONS_READ, SwitchPoint.GATE_DRAIN))
                .explore(() -> {
                    CaptureGate gate = new CaptureGate(Interposer.GUARD);
                    Interposer interposer = Interposer.over(new FakeDriverApi());
                    MemorySegment current = Arena.ofAuto().allocate(ValueLayout.JAVA_LONG);
                    List<String> log = Collections.synchronizedList(new ArrayList<>());
                    List<Step> steps = List.of(new Step("T1", () -> {
                        gate.enterSynchronizing();
                        log.add("section in");
                        gate.enterSynchronizing();
                        log.add("nested in");
                        gate.exitSynchronizing();
                        log.add("section out");
                        gate.exitSynchronizing();
                    }), new Step("T2", () -> {
                        CaptureGate.CaptureTicket ticket = gate.enterCapture();
                        log.add("capture in");
                        assertEquals(0, interposer.api().cuCtxGetCurrent(current)); // a switch while inside
                        log.add("capture out");
                        gate.exitCapture(ticket);
                    }));
                    return ScheduleExplorer.Run.of(interposer, steps, failures -> {
                        assertEquals(Arrays.asList(null, null), failures, "a step threw");
                        int in = log.indexOf("section in");
                        int out = log.indexOf("section out");
                        int captureIn = log.indexOf("capture in");
                        int captureOut = log.indexOf("capture out");
                        assertTrue(captureOut < in || captureIn > out, "the capture was inside with the section: " + log);
                        assertEquals(0, gate.sectionsInside());
                        assertFalse(gate.captureActive());
                    }, () -> { });
                });
        assertTrue(report.exhausted(), report.toString());
        System.out.println("EXPLORED " + report);
    }

    @Test
    void anExitWithoutAnEnterIsRefusedAndCountsNothing() throws Exception {
        CaptureGate gate = new CaptureGate(Duration.ZERO);
        assertThrows(IllegalStateException.class, gate::exitSynchronizing);
        assertEquals(0, gate.sectionsInside());
        CaptureGate.CaptureTicket ticket = gate.enterCapture(); // no section is counted
        gate.exitCapture(ticket);
    }
}
