package dev.gatun.cuda.graph;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.KernelLaunch;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.ModuleImage;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.testing.Background;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.FakeKernel;
import dev.gatun.cuda.testing.Interposer;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * {@link GraphSlot#updateKernelArguments} while another thread replays the slot: the driver does
 * not synchronize an executable, so it must never be updated while a launch of it is inside the
 * driver. An {@link Interposer} holds the replaying thread inside {@code cuGraphLaunch}; the
 * simulated driver flags a node update that overlaps it.
 */
class GraphSlotUpdateInterleavingTest {

    private static final LaunchConfig FOUR = LaunchConfig.of(1, 4);

    private final Interposer interposer = Interposer.over(new FakeDriverApi());
    private final Simulated sim = new Simulated(interposer);
    private final CudaContext ctx = sim.context();
    private final CudaGraphs graphs = CudaGraphs.create(ctx);
    private final Stream stream = ctx.createStream();

    GraphSlotUpdateInterleavingTest() {
        sim.gpu.kernelBody("add", FakeKernel.ADD); // add(p, n, v): p[i] += v
        ctx.modules().load("m", ModuleImage.ptx("add.ptx", Ptx.module("add", "u64", "u32", "u32")));
    }

    @Test
    @Tag("protocol-fix")
    void aKernelNodeIsNeverUpdatedWhileALaunchOfItsExecutableIsInsideTheDriver() {
        GraphSlot slot = graphs.registerGroup("o").slot("s");
        try (Kernel add = ctx.modules().kernel("m", "add"); DeviceBuffer a = ctx.allocate(16);
                DeviceBuffer c = ctx.allocate(16)) {
            a.asInts().copyFrom(new int[4]);
            c.asInts().copyFrom(new int[4]);
            slot.beginCapture(stream, CaptureMode.THREAD_LOCAL);
            add.launch(stream, FOUR, KernelArg.pointer(a), KernelArg.i32(4), KernelArg.i32(1));
            slot.endCapture();
            KernelLaunch intoC = add.prepare(FOUR, KernelArg.pointer(c), KernelArg.i32(4), KernelArg.i32(7));

            Interposer.Stop inLaunch = interposer.stopBefore("cuGraphLaunch").onThread("T1");
            Background<Void> t1 = Background.run("T1", () -> slot.replay(stream));
            inLaunch.awaitArrival();
            Background<Void> t2 = Background.run("T2", () -> slot.updateKernelArguments(0, 0, intoC));
            t2.awaitFinishedOrWaiting(); // finished: it updated inside the launch; waiting: it is ordered after it
            inLaunch.release();
            t1.join();
            t2.join();
            assertEquals(List.of(), sim.gpu.violations(), "the executable was changed while a launch of it was "
                    + "inside the driver");

            slot.replay(stream); // after the update: writes c
            int[] out = new int[4];
            c.asInts().copyTo(out);
            assertArrayEquals(new int[] {7, 7, 7, 7}, out, "the update applies to the launches after it");
            slot.reset();
        }
        graphs.close();
        stream.close();
        ctx.close();
        assertEquals(List.of(), sim.gpu.violations());
    }

    /**
     * A re-capture whose shape the slot's spare has, while another thread is inside
     * {@code cuGraphLaunch} of the segment's executable: the re-capture waits for that launch
     * before it updates anything (the executable it refuses becomes the spare, which a later
     * re-capture updates), and the replay after it runs the spare's new graph.
     */
    @Test
    void aRecaptureTakingTheSpareWaitsForALaunchInsideTheDriver() {
        GraphSlot slot = graphs.registerGroup("o").slot("spare");
        try (Kernel add = ctx.modules().kernel("m", "add"); DeviceBuffer a = ctx.allocate(16);
                DeviceBuffer c = ctx.allocate(16); Stream other = ctx.createStream()) {
            a.asInts().copyFrom(new int[4]);
            c.asInts().copyFrom(new int[4]);
            slot.beginCapture(stream, CaptureMode.THREAD_LOCAL);
            add.launch(stream, FOUR, KernelArg.pointer(a), KernelArg.i32(4), KernelArg.i32(1));
            slot.endCapture();
            slot.beginRecapture(0, stream, CaptureMode.THREAD_LOCAL); // two kernels: the first executable is the spare
            add.launch(stream, FOUR, KernelArg.pointer(a), KernelArg.i32(4), KernelArg.i32(1));
            add.launch(stream, FOUR, KernelArg.pointer(a), KernelArg.i32(4), KernelArg.i32(1));
            slot.endCapture();

            Interposer.Stop inLaunch = interposer.stopBefore("cuGraphLaunch").onThread("T1");
            Background<Void> t1 = Background.run("T1", () -> slot.replay(stream));
            inLaunch.awaitArrival();
            Background<Void> t2 = Background.run("T2", () -> {
                slot.beginRecapture(0, other, CaptureMode.THREAD_LOCAL); // one kernel: the spare's shape
                add.launch(other, FOUR, KernelArg.pointer(c), KernelArg.i32(4), KernelArg.i32(7));
                slot.endCapture();
            });
            t2.awaitFinishedOrWaiting();
            inLaunch.release();
            t1.join();
            t2.join();
            assertEquals(List.of(), sim.gpu.violations(), "an executable was changed while a launch of it was "
                    + "inside the driver");
            assertEquals(1, slot.counters().spareUpdates());

            slot.replay(stream); // the spare, updated: writes c
            int[] out = new int[4];
            c.asInts().copyTo(out);
            assertArrayEquals(new int[] {7, 7, 7, 7}, out, "the replay after the re-capture runs the spare's new graph");
            a.asInts().copyTo(out);
            assertArrayEquals(new int[] {2, 2, 2, 2}, out, "the held replay ran the two-kernel executable once");
            slot.reset();
        }
        graphs.close();
        stream.close();
        ctx.close();
        assertEquals(List.of(), sim.gpu.violations());
    }

    /**
     * The slot's counters racing a replay and a re-capture that takes the spare: the executable
     * the re-capture drops stops being a segment only after the replay inside cuGraphLaunch has
     * returned (its launch is folded in once, not lost with the view that counted it), and the
     * spare it takes had launched as a segment before (those launches were folded in when it was
     * dropped), so it counts from what it had launched when it became a segment again, not from 0.
     */
    @Test
    void countersReadWhileAReplayIsInsideTheDriverAndARecaptureTakesTheSpareCountEveryLaunchOnce() {
        GraphSlot slot = graphs.registerGroup("o").slot("spare-counts");
        try (Kernel add = ctx.modules().kernel("m", "add"); DeviceBuffer a = ctx.allocate(16);
                Stream other = ctx.createStream()) {
            a.asInts().copyFrom(new int[4]);
            slot.beginCapture(stream, CaptureMode.THREAD_LOCAL);
            add.launch(stream, FOUR, KernelArg.pointer(a), KernelArg.i32(4), KernelArg.i32(1));
            slot.endCapture();
            slot.replay(stream);
            slot.replay(stream); // the one-kernel executable, the spare from the next re-capture on, launched twice
            slot.beginRecapture(0, stream, CaptureMode.THREAD_LOCAL); // two kernels: re-instantiated
            add.launch(stream, FOUR, KernelArg.pointer(a), KernelArg.i32(4), KernelArg.i32(1));
            add.launch(stream, FOUR, KernelArg.pointer(a), KernelArg.i32(4), KernelArg.i32(1));
            slot.endCapture();
            assertEquals(new GraphCounters(2, 2, 2, 0, 0, 1, 0, 0), slot.counters());

            Interposer.Stop inLaunch = interposer.stopBefore("cuGraphLaunch").onThread("T1");
            Background<Void> t1 = Background.run("T1", () -> slot.replay(stream));
            inLaunch.awaitArrival();
            Background<Void> t2 = Background.run("T2", () -> {
                slot.beginRecapture(0, other, CaptureMode.THREAD_LOCAL); // one kernel: the spare's shape
                add.launch(other, FOUR, KernelArg.pointer(a), KernelArg.i32(4), KernelArg.i32(1));
                slot.endCapture();
            });
            t2.awaitFinishedOrWaiting();
            assertFalse(t2.finished(), "the re-capture did not wait for the replay inside the driver");
            assertEquals(new GraphCounters(2, 2, 2, 0, 0, 1, 0, 0), slot.counters(), "while the re-capture waits, "
                    + "the replay inside the driver is counted nowhere yet");
            inLaunch.release();
            t1.join();
            t2.join();
            assertEquals(new GraphCounters(3, 3, 3, 0, 1, 1, 0, 0), slot.counters(), "the launch made while the "
                    + "re-capture waited is counted once, folded in as the re-capture dropped its executable");

            slot.replay(stream); // the spare, now the segment again
            assertEquals(new GraphCounters(3, 4, 4, 0, 1, 1, 0, 0), slot.counters(), "the spare's launches before it "
                    + "became the segment again are counted once (folded in when it was dropped), not twice");
            int[] out = new int[4];
            a.asInts().copyTo(out);
            assertArrayEquals(new int[] {5, 5, 5, 5}, out, "two replays of one kernel, the held one of two, one of one");
            slot.reset();
        }
        graphs.close();
        stream.close();
        ctx.close();
        assertEquals(List.of(), sim.gpu.violations());
    }

    /**
     * The slot's counters racing replays and a reset: a replay's segment launch is counted by its
     * executable (under the lock its launch takes), not by the slot. Held inside cuGraphLaunch,
     * a replay is counted nowhere yet; a reset begun meanwhile waits for it, and while it waits
     * its view still counts the executable it drops; once the reset is over, the launch made
     * after the reset began is in the count, and no snapshot ever showed a replay without its
     * launch or a count going down.
     */
    @Test
    void countersReadWhileAReplayIsInsideTheDriverAndAResetWaitsForItCountEveryLaunchOnce() {
        GraphSlot slot = graphs.registerGroup("o").slot("s");
        try (Kernel add = ctx.modules().kernel("m", "add"); DeviceBuffer a = ctx.allocate(16)) {
            a.asInts().copyFrom(new int[4]);
            slot.beginCapture(stream, CaptureMode.THREAD_LOCAL);
            add.launch(stream, FOUR, KernelArg.pointer(a), KernelArg.i32(4), KernelArg.i32(1));
            slot.endCapture();
            slot.replay(stream);
            assertEquals(new GraphCounters(1, 1, 1, 0, 0, 0, 0, 0), slot.counters());

            Interposer.Stop inLaunch = interposer.stopBefore("cuGraphLaunch").onThread("T1");
            Background<Void> t1 = Background.run("T1", () -> slot.replay(stream));
            inLaunch.awaitArrival();
            assertEquals(new GraphCounters(1, 1, 1, 0, 0, 0, 0, 0), slot.counters(), "the replay inside the driver "
                    + "is counted nowhere yet");
            Background<Boolean> t2 = Background.call("T2", slot::reset);
            t2.awaitFinishedOrWaiting();
            assertFalse(t2.finished(), "the reset did not wait for the replay inside the driver");
            assertEquals(new GraphCounters(1, 1, 1, 0, 0, 0, 0, 0), slot.counters(), "while the reset waits, its view "
                    + "counts the executable it drops");
            inLaunch.release();
            t1.join();
            assertTrue(t2.join(), "the reset dropped the segment");
            assertEquals(new GraphCounters(1, 2, 2, 0, 0, 0, 0, 1), slot.counters(), "the launch made while the reset "
                    + "waited is counted once, folded in as the reset dropped its executable");
        }
        graphs.close();
        stream.close();
        ctx.close();
        assertEquals(List.of(), sim.gpu.violations());
    }
}
