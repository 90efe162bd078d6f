package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.context.Retirement;
import dev.gatun.cuda.testing.Simulated;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A hold (a captured graph keeping a handle) and a close race without a monitor on the close's
 * path: close sets closed and then reads the holds, hold counts and then reads closed, so of the
 * two at least one sees the other. Whatever the order, the handle is freed exactly once, and
 * never while a hold that succeeded is outstanding.
 */
class HoldCloseOrderTest {

    private final Simulated sim = new Simulated();
    private final ContextState state = sim.context().state();

    /** A resource that counts its frees and runs a step between setting closed and reading holds. */
    private static final class Probe extends NativeResource {
        final AtomicInteger frees = new AtomicInteger();
        Runnable afterClosedIsSet = () -> { };

        Probe(ContextState context) {
            super(context, OwnerKind.EVENT);
        }

        @Override
        protected void beforeRetire() {
            afterClosedIsSet.run();
        }

        @Override
        protected Retirement.Release howToFree() {
            return () -> {
                frees.incrementAndGet();
                return 0;
            };
        }

        @Override
        protected boolean synchronizingFree() {
            return false;
        }

        @Override
        public String identity() {
            return "probe#" + id();
        }
    }

    @AfterEach
    void closeContext() {
        sim.context().close();
    }

    @Test
    void aHoldBetweenTheCloseAndItsReadOfHoldsIsRefusedAndTheCloseFreesOnce() {
        Probe probe = new Probe(state);
        probe.afterClosedIsSet = () -> assertThrows(IllegalStateException.class, probe::hold);
        assertTrue(probe.close());
        assertFalse(probe.held(), "the refused hold withdrew its count");
        assertEquals(1, probe.frees.get());
    }

    @Test
    void aHoldBeforeTheCloseDefersTheFreeToItsUnhold() {
        Probe probe = new Probe(state);
        probe.hold();
        assertTrue(probe.close());
        assertEquals(0, probe.frees.get(), "freed while a graph still holds it");
        probe.unhold();
        assertEquals(1, probe.frees.get());
    }

    @Test
    void racingHoldsAndClosesFreeOnceAndNeverUnderAHold() throws Exception {
        CyclicBarrier start = new CyclicBarrier(2);
        for (int i = 0; i < 2_000; i++) {
            Probe probe = new Probe(state);
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
                assertEquals(0, probe.frees.get(), "round " + i + ": freed while a hold that succeeded is outstanding");
                probe.unhold();
            }
            assertEquals(1, probe.frees.get(), "round " + i + ": frees");
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
            Probe probe = new Probe(state);
            probe.hold();
            Thread unholder = Thread.ofPlatform().start(() -> {
                await(start);
                probe.unhold();
            });
            await(start);
            assertTrue(probe.close());
            unholder.join();
            assertFalse(probe.held());
            assertEquals(1, probe.frees.get(), "round " + i + ": frees");
        }
    }

    private static void await(CyclicBarrier barrier) {
        try {
            barrier.await();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
