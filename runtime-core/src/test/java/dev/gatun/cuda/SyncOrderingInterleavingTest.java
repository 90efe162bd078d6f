package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.gatun.cuda.internal.context.SwitchPoint;
import dev.gatun.cuda.testing.Background;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.Interposer;
import dev.gatun.cuda.testing.Simulated;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The ordering of synchronous operations (runtime-core/README.md, "Ordering of synchronous
 * operations") when two of them race on two threads, forced with an {@link Interposer}: thread T1
 * is held inside the fence record that orders the copy stream after stream S, the other step runs,
 * then T1 goes on. The second operation must still be ordered after the fill queued on S before
 * it, however the two interleave (concurrency review 2026-12-03, sections 1 and 10).
 */
class SyncOrderingInterleavingTest {

    private static final long MIB = 1 << 20;
    private static final int[] SEVENS = {7, 7, 7, 7};

    private final Interposer interposer = Interposer.over(new FakeDriverApi());
    private final Simulated sim = new Simulated(interposer);
    private final CudaContext ctx = sim.context();
    private final Stream s = ctx.createStream();

    /** Holds T1 just before it records the fence on {@link #s} that its synchronous copy orders after. */
    private Interposer.Stop holdT1AtTheFenceOnS() {
        return interposer.stopBefore("cuEventRecord").onThread("T1").where(Interposer.argument(1, s.state().handle()));
    }

    @Test
    @Tag("protocol-fix")
    void aSynchronousReadSeesTheFillQueuedBeforeItWhileAnotherSynchronousCopyOrdersItself() {
        try (DeviceBuffer b = ctx.allocate(16); DeviceBuffer c = ctx.allocate(16)) {
            b.asInts().copyFrom(new int[] {-1, -1, -1, -1});
            HeldStreams.hold(sim, s); // the GPU is busy on S: the fill below is queued, not run
            s.fill(b.asInts(), 7);
            Interposer.Stop fence = holdT1AtTheFenceOnS();
            Background<Void> t1 = Background.run("T1", () -> c.asInts().copyFrom(new int[4]));
            fence.awaitArrival(); // T1 has taken S's "unordered" mark but not yet fenced S
            int[] out = new int[4];
            Background<Void> t2 = Background.run("T2", () -> b.asInts().copyTo(out)); // starts after the fill returned
            t2.awaitFinishedOrWaiting();
            fence.release();
            t1.join();
            t2.join();
            assertArrayEquals(SEVENS, out, "the synchronous read returned " + Arrays.toString(out)
                    + "; the fill queued on S before it writes 7s");
            HeldStreams.release(sim, s);
        }
        s.close();
        assertEquals(List.of(), sim.gpu.violations());
    }

    @AfterEach
    void releaseSwitchPoints() {
        Interposer.releaseSwitchPoints();
    }

    /**
     * A capture begins on S (T1, held under S's lock just before it reads S's "unordered" flag to
     * decide whether it needs a fence) while a synchronous read (T2) orders itself after S. Found
     * by the schedule explorer (StreamProtocolExplorationTest.aShrinkAndWorkQueuedBeforeACaptureBegins)
     * on 9e28154: the read took S's flag without S's lock and then waited for it; the begin found
     * the flag clear and took no fence; the read then found S capturing with no fence to wait on,
     * and returned the bytes from before the fill queued on S. The flag is now taken under S's lock
     * with the fence, so the begin sees the flag, takes its fence, and the read waits on it.
     */
    @Test
    void aSynchronousReadRacingACaptureBeginOnTheStreamItOrdersAfterSeesTheFill() {
        try (DeviceBuffer b = ctx.allocate(16)) {
            b.asInts().copyFrom(new int[] {-1, -1, -1, -1});
            HeldStreams.hold(sim, s);
            s.fill(b.asInts(), 7);
            Interposer.Stop beforeTheFlag = interposer.stopAt(SwitchPoint.FENCE_BEFORE_CAPTURE_READ).onThread("T1");
            Background<StreamCapture> t1 = Background.call("T1", () -> s.beginCapture(CaptureMode.RELAXED));
            beforeTheFlag.awaitArrival(); // T1 holds S's lock
            int[] out = new int[4];
            Background<Void> t2 = Background.run("T2", () -> b.asInts().copyTo(out));
            assertFalse(t2.awaitFinishedOrWaiting(), "the read needs S's lock, which the begin holds");
            beforeTheFlag.release();
            StreamCapture capture = t1.join();
            t2.join();
            assertArrayEquals(SEVENS, out, "the synchronous read returned " + Arrays.toString(out)
                    + "; the fill queued on S before the capture began writes 7s");
            capture.end().close();
            HeldStreams.release(sim, s);
        }
        s.close();
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    @Tag("protocol-fix")
    void aShrinkRacingASynchronousCopyDoesNotUnmapAChunkAQueuedFillStillWrites() {
        try (GrowableBuffer g = ctx.reserveGrowable(16 * MIB); DeviceBuffer c = ctx.allocate(16)) {
            g.grow(4 * MIB);
            DeviceBuffer view = g.mapped();
            HeldStreams.hold(sim, s);
            s.fill(view.asInts().slice(3 * MIB / 4, 16), 7); // in the second 2 MiB chunk
            view.close();
            Interposer.Stop fence = holdT1AtTheFenceOnS();
            Background<Void> t1 = Background.run("T1", () -> c.asInts().copyFrom(new int[4]));
            fence.awaitArrival();
            Background<Void> t2 = Background.run("T2", () -> g.shrink(2 * MIB));
            t2.awaitFinishedOrWaiting();
            fence.release();
            t1.join();
            t2.join();
            HeldStreams.release(sim, s);
        }
        s.close();
        ctx.synchronize();
        assertEquals(List.of(), sim.gpu.violations(), "the shrink unmapped a chunk the fill queued on S still writes");
    }

    @Test
    @Tag("protocol-fix")
    void aFillOnAViewRacingAShrinkThatRevokesItIsRefusedOrQueuedBeforeTheUnmap() {
        try (GrowableBuffer g = ctx.reserveGrowable(16 * MIB)) {
            g.grow(4 * MIB);
            DeviceView chunk = g.mapped().asInts().slice(3 * MIB / 4, 16); // in the second 2 MiB chunk
            HeldStreams.hold(sim, s);
            Interposer.Stop inFill = interposer.stopBefore("cuMemsetD32Async").onThread("T1");
            Background<Void> t1 = Background.run("T1", () -> s.fill(chunk, 7));
            inFill.awaitArrival(); // the fill has checked its view: open, and about to be queued
            Background<Void> t2 = Background.run("T2", () -> g.shrink(2 * MIB));
            t2.awaitFinishedOrWaiting();
            inFill.release();
            t2.join();
            fillRefusedOrBeforeTheUnmap(t1);
        }
        s.close();
        ctx.synchronize();
        assertEquals(List.of(), sim.gpu.violations(), "the shrink unmapped a chunk under the fill");
    }

    /**
     * Found by {@code StreamProtocolExplorationTest} on main after the memory-kinds refactor: the
     * shrink closes the view, retires it (the fences of the streams that used it so far, then a
     * reap, which makes the context current) and only then disowns it, while a use checks only that
     * the buffer still owns its memory. A fill in that window passes its checks and is queued after
     * the view's fences, on a chunk the shrink then unmaps.
     */
    @Test
    @Tag("protocol-fix")
    void aFillRacingTheRetirementOfTheViewAShrinkRevokesIsRefusedOrQueuedBeforeTheUnmap() {
        try (GrowableBuffer g = ctx.reserveGrowable(16 * MIB)) {
            g.grow(4 * MIB);
            DeviceView chunk = g.mapped().asInts().slice(3 * MIB / 4, 16);
            HeldStreams.hold(sim, s);
            // Held at the shrink's first cuCtxSetCurrent: on main, inside the revoked view's retirement.
            Interposer.Stop inShrink = interposer.stopBefore("cuCtxSetCurrent").onThread("T1");
            Background<Void> t1 = Background.run("T1", () -> g.shrink(2 * MIB));
            inShrink.awaitArrival();
            // The fill then passes its checks and is held just before it is queued.
            Interposer.Stop inFill = interposer.stopBefore("cuMemsetD32Async").onThread("T2");
            Background<Void> t2 = Background.run("T2", () -> s.fill(chunk, 7));
            boolean fillHeld = inFill.awaitArrivalOr(t2);
            inShrink.release();
            t1.awaitFinishedOrWaiting(); // finished: it unmapped without waiting for the fill
            if (fillHeld) {
                inFill.release();
            }
            t1.join();
            fillRefusedOrBeforeTheUnmap(t2);
        }
        s.close();
        ctx.synchronize();
        assertEquals(List.of(), sim.gpu.violations(), "the shrink unmapped a chunk under the fill");
    }

    /**
     * After a fill on {@code fill}'s thread raced a shrink that revoked its view: the fill was
     * refused as a use of a closed view, or was queued before the shrink unmapped its chunk (the
     * caller checks, once the held stream ran, that nothing touched unmapped memory).
     */
    private void fillRefusedOrBeforeTheUnmap(Background<Void> fill) {
        Throwable refused = fill.joinFailure();
        if (refused != null) {
            assertInstanceOf(IllegalStateException.class, refused, "the fill is refused as a use of a revoked view, or "
                    + "queued before the shrink unmaps its chunk; it reached the driver on unmapped memory: " + refused);
        }
        HeldStreams.release(sim, s);
    }

    @Test
    @Tag("protocol-fix")
    void anErrorWhileFencingLeavesTheStreamForTheNextSynchronousOperationToOrderAfter() {
        try (DeviceBuffer b = ctx.allocate(16); DeviceBuffer c = ctx.allocate(16)) {
            b.asInts().copyFrom(new int[] {-1, -1, -1, -1});
            HeldStreams.hold(sim, s);
            s.fill(b.asInts(), 7);
            OutOfMemoryError injected = new OutOfMemoryError("injected: no memory left to record the fence on S");
            interposer.stopBefore("cuEventRecord").where(Interposer.argument(1, s.state().handle())).throwing(injected);
            OutOfMemoryError thrown = assertThrows(OutOfMemoryError.class, () -> c.asInts().copyFrom(new int[4]));
            assertEquals(injected, thrown, "the copy fails with the error of its fence");
            int[] out = new int[4];
            b.asInts().copyTo(out);
            assertArrayEquals(SEVENS, out, "after a failed fence, the next synchronous read returned " + Arrays.toString(out)
                    + " instead of ordering after the fill queued on S");
            HeldStreams.release(sim, s);
        }
        s.close();
        assertEquals(List.of(), sim.gpu.violations());
    }
}
