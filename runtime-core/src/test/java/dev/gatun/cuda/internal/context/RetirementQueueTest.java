package dev.gatun.cuda.internal.context;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.gatun.cuda.OwnerKind;
import dev.gatun.cuda.testing.LogCapture;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.event.Level;

class RetirementQueueTest {

    /** Evidence a test completes by hand. */
    private static final class Switch implements Evidence {
        int result = PENDING;
        int polls;
        int releases;

        @Override
        public int poll() {
            polls++;
            return result;
        }

        @Override
        public void release() {
            releases++;
        }
    }

    private static final class Host implements RetirementQueue.Host {
        final CaptureGate gate = new CaptureGate(Duration.ZERO);
        boolean poisoned;
        final List<String> freed = new ArrayList<>();
        final List<String> failed = new ArrayList<>();

        @Override
        public boolean callsAllowedHere() {
            return true;
        }

        @Override
        public boolean poisoned() {
            return poisoned;
        }

        @Override
        public CaptureGate gate() {
            return gate;
        }

        @Override
        public void retired(Object identity, boolean ok) {
            (ok ? freed : failed).add(identity.toString());
        }

        @Override
        public void abandoned(Retirement retirement) {
            failed.add(retirement.identity().toString());
        }

        @Override
        public String resultName(int result) {
            return "R" + result;
        }
    }

    private final Host host = new Host();

    /** Enters the gate's capture side from another thread (the gate's bound is zero: it fails unless no section is in). */
    private CaptureGate.CaptureTicket captureOnAnotherThread() throws Exception {
        return java.util.concurrent.CompletableFuture.supplyAsync(() -> {
            try {
                return host.gate.enterCapture();
            } catch (CaptureGate.GateException e) {
                throw new IllegalStateException(e);
            }
        }).get();
    }
    private final RetirementQueue queue = new RetirementQueue(host);

    @BeforeEach
    void forgetEarlierLogs() {
        LogCapture.clear();
    }

    @Test
    void nothingIsFreedUntilEveryStreamsEvidenceCompletes() {
        Switch a = new Switch();
        Switch b = new Switch();
        AtomicInteger frees = new AtomicInteger();
        queue.submit(new Retirement("buffer", OwnerKind.DEVICE_BUFFER, List.of(a, b), () -> { frees.incrementAndGet(); return 0; }, true));
        assertEquals(0, frees.get());
        a.result = 0;
        queue.reap();
        assertEquals(0, frees.get(), "one stream's fence is not enough");
        b.result = 0;
        queue.reap();
        assertEquals(1, frees.get());
        assertEquals(List.of("buffer"), host.freed);
        assertEquals(1, a.releases);
        assertEquals(1, b.releases);
        assertEquals(2, a.polls, "polled at submission and at the first reap; once complete, never again");
        queue.reap();
        assertEquals(1, frees.get(), "freed once");
        assertEquals(0, queue.pending());
    }

    @Test
    void aFailedFreeIsRetriedAtLaterReapsThenAbandoned() {
        AtomicInteger attempts = new AtomicInteger();
        queue.submit(new Retirement("stubborn", OwnerKind.EVENT, List.of(), () -> { attempts.incrementAndGet(); return 1; }, false));
        assertEquals(1, attempts.get(), "tried once at submission, not in a loop");
        queue.reap();
        assertEquals(2, attempts.get());
        queue.reap();
        assertEquals(3, attempts.get());
        assertEquals(List.of("stubborn"), host.failed);
        queue.reap();
        assertEquals(3, attempts.get(), "abandoned after " + RetirementQueue.MAX_FREE_ATTEMPTS + " attempts");
        assertEquals(0, queue.pending());
        LogCapture.expect(Level.WARN, RetirementQueue.class, "Freeing stubborn failed with R1; will retry at the next reap (attempt 2 of 3)");
        LogCapture.expect(Level.ERROR, RetirementQueue.class, "Leaking stubborn: free failed 3 times, last with R1");
    }

    @Test
    void aFreeThatRecoversIsCountedAsFreed() {
        AtomicInteger attempts = new AtomicInteger();
        queue.submit(new Retirement("flaky", OwnerKind.STREAM, List.of(), () -> attempts.incrementAndGet() == 1 ? 1 : 0, false));
        queue.reap();
        assertEquals(List.of("flaky"), host.freed);
        assertEquals(List.of(), host.failed);
        LogCapture.expect(Level.WARN, RetirementQueue.class, "Freeing flaky failed with R1; will retry at the next reap (attempt 1 of 3)");
        assertEquals(List.of(), LogCapture.find(Level.ERROR, RetirementQueue.class, "flaky"), "a free that recovers leaks nothing");
    }

    @Test
    void synchronizingFreesWaitOutAGlobalCaptureWithoutBlocking() throws Exception {
        AtomicInteger frees = new AtomicInteger();
        CaptureGate.CaptureTicket capture = captureOnAnotherThread();
        queue.submit(new Retirement("sync free", OwnerKind.DEVICE_BUFFER, List.of(), () -> { frees.incrementAndGet(); return 0; }, true));
        queue.submit(new Retirement("async free", OwnerKind.DEVICE_BUFFER, List.of(), () -> { frees.incrementAndGet(); return 0; }, false));
        assertEquals(List.of("async free"), host.freed, "only the free that cannot break the capture ran");
        host.gate.exitCapture(capture);
        queue.reap();
        assertEquals(List.of("async free", "sync free"), host.freed);
    }

    @Test
    void aPoisonedContextAbandonsEntriesInsteadOfRetryingForever() {
        Switch pending = new Switch();
        queue.submit(new Retirement("doomed", OwnerKind.DEVICE_BUFFER, List.of(pending), () -> 0, true));
        host.poisoned = true;
        queue.reap();
        assertEquals(List.of("doomed"), host.failed);
        assertEquals(0, queue.pending());
        LogCapture.expect(Level.WARN, RetirementQueue.class, "Abandoning doomed: the context is poisoned by a sticky error");
    }

    @Test
    void drainFreesEverythingAfterADeviceSynchronize() {
        Switch never = new Switch();
        queue.submit(new Retirement("in flight", OwnerKind.PINNED_BUFFER, List.of(never), () -> 0, true));
        assertEquals(1, queue.pending());
        assertEquals(1, queue.drainAfterSynchronize());
        assertEquals(List.of("in flight"), host.freed);
    }
    @Test
    void aHandleWithNothingToWaitForIsFreedNowWithoutAnEntry() {
        AtomicInteger frees = new AtomicInteger();
        queue.freeNowOrSubmit("unused", OwnerKind.DEVICE_BUFFER, () -> { frees.incrementAndGet(); return 0; }, true);
        assertEquals(1, frees.get());
        assertEquals(List.of("unused"), host.freed);
        assertEquals(0, queue.pending(), "never queued");
        // The gate's bound is zero: a capture gets in only if the free left its section.
        CaptureGate.CaptureTicket capture = assertDoesNotThrow(this::captureOnAnotherThread);
        host.gate.exitCapture(capture);
    }

    @Test
    void aSynchronizingFreeNowDuringAGlobalCaptureIsQueuedWithoutRunning() throws Exception {
        AtomicInteger frees = new AtomicInteger();
        CaptureGate.CaptureTicket capture = captureOnAnotherThread();
        queue.freeNowOrSubmit("sync free", OwnerKind.DEVICE_BUFFER, () -> { frees.incrementAndGet(); return 0; }, true);
        queue.freeNowOrSubmit("async free", OwnerKind.DEVICE_BUFFER, () -> { frees.incrementAndGet(); return 0; }, false);
        assertEquals(List.of("async free"), host.freed, "only the free that cannot break the capture ran");
        assertEquals(1, queue.pending());
        host.gate.exitCapture(capture);
        queue.reap();
        assertEquals(List.of("async free", "sync free"), host.freed);
        assertEquals(2, frees.get());
    }

    @Test
    void aFreeNowThatFailsCountsAsTheFirstAttemptAndWaitsForTheNextReap() {
        AtomicInteger attempts = new AtomicInteger();
        queue.freeNowOrSubmit("flaky", OwnerKind.EVENT, () -> attempts.incrementAndGet() == 1 ? 1 : 0, false);
        assertEquals(1, attempts.get(), "tried once, not retried in the same close");
        assertEquals(1, queue.pending());
        LogCapture.expect(Level.WARN, RetirementQueue.class, "Freeing flaky failed with R1; will retry at the next reap (attempt 1 of 3)");
        queue.reap();
        assertEquals(2, attempts.get());
        assertEquals(List.of("flaky"), host.freed);
        assertEquals(0, queue.pending());
    }

    @Test
    void onAPoisonedContextAFreeNowIsLeftToTheQueueWhichAbandonsIt() {
        AtomicInteger attempts = new AtomicInteger();
        host.poisoned = true;
        queue.freeNowOrSubmit("poisoned", OwnerKind.DEVICE_BUFFER, () -> { attempts.incrementAndGet(); return 0; }, false);
        assertEquals(0, attempts.get(), "no driver free on a poisoned context");
        assertEquals(List.of("poisoned"), host.failed);
        LogCapture.expect(Level.WARN, RetirementQueue.class, "Abandoning poisoned: the context is poisoned by a sticky error");
    }

    @Test
    void aFreeTheDriverAnswersWithInvalidHandleIsGivenUpAtOnce() {
        AtomicInteger attempts = new AtomicInteger();
        int invalidHandle = dev.gatun.cuda.bindings.driver.CudaDriver.CUDA_ERROR_INVALID_HANDLE();
        queue.submit(new Retirement("gone", OwnerKind.STREAM, List.of(), () -> { attempts.incrementAndGet(); return invalidHandle; }, false));
        queue.reap();
        queue.reap();
        assertEquals(1, attempts.get(), "never retried: a retry could name a handle the driver handed out again");
        assertEquals(List.of("gone"), host.failed);
        assertEquals(0, queue.pending());
        LogCapture.expect(Level.ERROR, RetirementQueue.class, "Leaking gone: the driver answered R" + invalidHandle
                + ", so it is never retried");
    }
}
