package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.ProbeResource;
import dev.gatun.cuda.internal.context.SwitchPoint;
import dev.gatun.cuda.testing.Background;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.Interposer;
import dev.gatun.cuda.testing.ScheduleExplorer;
import dev.gatun.cuda.testing.ScheduleExplorer.Step;
import dev.gatun.cuda.testing.Simulated;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;

/**
 * A hold (a captured graph keeping a handle) and a close race without a monitor on the close's
 * path: close sets closed and then reads the holds, hold counts and then reads closed, so of the
 * two at least one sees the other. Whatever the order, the handle is freed exactly once, and
 * never while a hold that succeeded is outstanding. The racing tests sample the orders; the
 * exploring ones run every order of the two threads' steps at the protocol's switch points
 * (internal/context/SwitchPoint), which is what proves them.
 */
class HoldCloseOrderTest {

    private final Interposer interposer = Interposer.over(new FakeDriverApi());
    private final Simulated sim = new Simulated(interposer);
    private final ContextState state = sim.context().state();

    @AfterEach
    void closeContext() {
        sim.context().close();
    }

    @Test
    void aHoldBetweenTheCloseAndItsReadOfHoldsIsRefusedAndTheCloseFreesOnce() {
        ProbeResource probe = new ProbeResource(state);
        probe.afterClosedIsSet(() -> assertThrows(IllegalStateException.class, probe::hold));
        assertTrue(probe.close());
        assertFalse(probe.held(), "the refused hold withdrew its count");
        assertEquals(1, probe.frees());
    }

    @Test
    void aHoldBeforeTheCloseDefersTheFreeToItsUnhold() {
        ProbeResource probe = new ProbeResource(state);
        probe.hold();
        assertTrue(probe.close());
        assertEquals(0, probe.frees(), "freed while a graph still holds it");
        probe.unhold();
        assertEquals(1, probe.frees());
    }

    @Test
    void racingHoldsAndClosesFreeOnceAndNeverUnderAHold() throws Exception {
        CyclicBarrier start = new CyclicBarrier(2);
        for (int i = 0; i < 2_000; i++) {
            ProbeResource probe = new ProbeResource(state);
            boolean[] held = new boolean[1];
            Thread holder = Thread.ofPlatform().start(() -> {
                await(start);
                try {
                    probe.hold();
                    held[0] = true;
                } catch (IllegalStateException closed) {
                    held[0] = false; // the close came first: refused, as it should be
                }
            });
            await(start);
            probe.close();
            holder.join();
            if (held[0]) {
                assertEquals(0, probe.frees(), "round " + i + ": freed while a hold that succeeded is outstanding");
                probe.unhold();
            }
            assertEquals(1, probe.frees(), "round " + i + ": frees");
        }
    }

    /**
     * The last unhold racing the close of a held handle: the close defers the free to the hold,
     * the unhold frees it, or the close frees it when the unhold came first; in every order exactly
     * once. (Before the close set its deferral ahead of its second read of the holds, an unhold
     * between that read and the deferral saw no deferral, and the handle was never freed.) The
     * window is a few instructions wide, so this can miss it; the order argument is in close().
     */
    @Test
    void aLastUnholdRacingTheCloseFreesOnce() throws Exception {
        CyclicBarrier start = new CyclicBarrier(2);
        for (int i = 0; i < 5_000; i++) {
            ProbeResource probe = new ProbeResource(state);
            probe.hold();
            Thread unholder = Thread.ofPlatform().start(() -> {
                await(start);
                probe.unhold();
            });
            await(start);
            assertTrue(probe.close());
            unholder.join();
            assertFalse(probe.held());
            assertEquals(1, probe.frees(), "round " + i + ": frees");
        }
    }

    /**
     * Every order of the close of a held handle and its last unhold, switching at each step on
     * the holds and the deferral (review 2026-12-06, section 3.2): the handle is retired exactly
     * once. With the pre-2026-12-04 order (the close reads the holds, then defers), the unhold
     * between the two finds no deferral, and nothing ever retires the handle.
     */
    @Test
    void everyOrderOfTheCloseOfAHeldHandleAndItsLastUnholdRetiresItOnce(TestReporter reporter) {
        StreamProtocolExplorationTest.report(reporter, ScheduleExplorer.of("close of a held handle || its last unhold")
                .explore(() -> {
                    ProbeResource probe = new ProbeResource(state);
                    probe.hold();
                    return ScheduleExplorer.Run.of(interposer, List.of(new Step("T1", probe::close),
                            new Step("T2", probe::unhold)), failures -> {
                                assertEquals(null, failures.get(0), "the close threw");
                                assertEquals(null, failures.get(1), "the unhold threw");
                                assertFalse(probe.held());
                                assertEquals(1, probe.frees(), "frees of the handle once both steps returned");
                            }, () -> {
                            });
                }));
    }

    /** Every order of a hold and a close: freed once, and never while the hold that succeeded is outstanding. */
    @Test
    void everyOrderOfAHoldAndACloseFreesOnceAndNeverUnderAHold(TestReporter reporter) {
        StreamProtocolExplorationTest.report(reporter, ScheduleExplorer.of("hold || close").explore(() -> {
            ProbeResource probe = new ProbeResource(state);
            AtomicBoolean held = new AtomicBoolean();
            return ScheduleExplorer.Run.of(interposer, List.of(new Step("T1", () -> {
                probe.hold();
                held.set(true);
            }), new Step("T2", probe::close)), failures -> {
                if (failures.get(0) != null) {
                    assertEquals(IllegalStateException.class, failures.get(0).getClass(), "refused as closed");
                }
                assertEquals(null, failures.get(1), "the close threw");
                if (held.get()) {
                    assertEquals(0, probe.frees(), "freed while a hold that succeeded is outstanding");
                    probe.unhold();
                }
                assertEquals(1, probe.frees(), "frees");
            }, () -> {
            });
        }));
    }

    /**
     * Every order of a hold (which takes no monitor once it finds neither closed nor closing) and
     * a closeUnlessHeld (which announces closing, then reads the holds, under the monitor): the
     * close closes only when no hold stands, and a hold that stands never sees its handle freed.
     */
    @Test
    void everyOrderOfAHoldAndACloseUnlessHeldClosesOnlyWhenNothingHolds(TestReporter reporter) {
        StreamProtocolExplorationTest.report(reporter, ScheduleExplorer.of("hold || closeUnlessHeld").explore(() -> {
            ProbeResource probe = new ProbeResource(state);
            AtomicBoolean held = new AtomicBoolean();
            AtomicBoolean closed = new AtomicBoolean();
            return ScheduleExplorer.Run.of(interposer, List.of(new Step("T1", () -> {
                probe.hold();
                held.set(true);
            }), new Step("T2", () -> closed.set(probe.closeUnlessHeld()))), failures -> {
                if (failures.get(0) != null) {
                    assertEquals(IllegalStateException.class, failures.get(0).getClass(), "refused as closed");
                }
                assertEquals(null, failures.get(1), "closeUnlessHeld threw");
                assertTrue(held.get() != closed.get(), "exactly one of the two won: held " + held + ", closed " + closed);
                if (held.get()) {
                    assertEquals(0, probe.frees(), "freed while a hold that succeeded is outstanding");
                    probe.unhold();
                    assertTrue(probe.closeUnlessHeld(), "nothing holds it any more");
                }
                assertFalse(probe.held(), "a refused hold left its count");
                assertEquals(1, probe.frees(), "frees");
            }, () -> {
            });
        }));
    }

    /**
     * closeUnlessHeld held just after it announced closing (at its read of the holds, under the
     * monitor): a hold that counts meanwhile sees closing and waits for the monitor, instead of
     * standing on a handle about to close; the close then sees that count and refuses, and the
     * hold stands.
     */
    @Test
    void aHoldThatSeesCloseUnlessHeldDecidingWaitsForItsDecision() {
        ProbeResource probe = new ProbeResource(state);
        Interposer.Stop deciding = interposer.stopAt(SwitchPoint.HOLDS_READ).onThread("closer");
        try {
            Background<Boolean> closer = Background.call("closer", probe::closeUnlessHeld);
            deciding.awaitArrival();
            Background<Void> holder = Background.run("holder", probe::hold);
            holder.awaitFinishedOrWaiting();
            assertFalse(holder.finished(), "the hold stood without waiting while closeUnlessHeld was deciding");
            assertTrue(probe.held(), "the hold counted before it read closing");
            deciding.release();
            assertFalse(closer.join(), "closeUnlessHeld closed a handle a hold had counted on");
            holder.join();
            assertTrue(probe.held());
            assertFalse(probe.isClosed());
        } finally {
            Interposer.releaseSwitchPoints();
        }
        probe.unhold();
        assertTrue(probe.closeUnlessHeld());
        assertEquals(1, probe.frees());
    }

    private static void await(CyclicBarrier barrier) {
        try {
            barrier.await();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
