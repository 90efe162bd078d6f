package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.Background;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.Interposer;
import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.ValueLayout;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Host access to a pinned buffer that graph launches copy into, racing the launches and the
 * executables that hold it, forced with an {@link Interposer}.
 */
class GraphPinnedInterleavingTest {

    private static final int POISON = 0xDEAD;

    private final Interposer interposer = Interposer.over(new FakeDriverApi());
    private final Simulated sim = new Simulated(interposer);
    private final CudaContext ctx = sim.context();
    private final Stream stream = ctx.createStream();

    /** A graph built by hand that fills {@code word} with 42 and copies it into {@code sum}. */
    private Graph fillAndDownload(DeviceBuffer word, PinnedBuffer sum) {
        Graph g = ctx.createGraph();
        g.addDownload(sum, 0, word.bytes(), g.addFill(word.asInts(), 42));
        return g;
    }

    private static int read(PinnedBuffer b) {
        return b.segment().get(ValueLayout.JAVA_INT, 0);
    }

    /**
     * The read finds the stream the executable is being launched on listed (the launch lists it
     * under the stream's lock before its driver call): it must not record its wait on that stream
     * before the launch is queued, so it waits for the stream's lock, then for the replay.
     */
    @Test
    void aReadRacingTheFirstLaunchOnAStreamWaitsForTheLaunchAndThenForItsReplay() {
        try (PinnedBuffer sum = ctx.allocatePinned(Integer.BYTES); DeviceBuffer word = ctx.allocate(Integer.BYTES);
                Stream other = ctx.createStream(); Graph graph = fillAndDownload(word, sum);
                GraphExec exec = graph.instantiate()) {
            sum.segment().set(ValueLayout.JAVA_INT, 0, POISON);
            Interposer.Stop inLaunch = interposer.stopBefore("cuGraphLaunch").onThread("launcher");
            Background<Void> launcher = Background.run("launcher", () -> exec.launch(other));
            inLaunch.awaitArrival(); // the executable lists the stream, whose lock the launch holds
            Background<Integer> reader = Background.call("reader", () -> read(sum));
            assertFalse(reader.awaitFinishedOrWaiting(), "the read returned " + (reader.finished() ? reader.join() : "")
                    + " while the launch it found listed was still being queued");
            inLaunch.release();
            launcher.join();
            assertEquals(42, reader.join(), "the read returned before the replay it waited for the launch of");
        }
        ctx.reap();
        assertEquals(List.of(), sim.gpu.violations());
    }

    /**
     * A host read waits under the buffer's transfer lock, not its monitor, which an executable
     * takes when it holds the buffer: instantiating (or updating, under the executable's lock,
     * which launches take under a stream's lock) never waits for a host read, which may itself
     * wait for a stream's lock.
     */
    @Test
    void anExecutableHoldsTheBufferWhileAHostReadWaitsForItsLastTransfer() {
        try (PinnedBuffer sum = ctx.allocatePinned(Integer.BYTES); DeviceBuffer word = ctx.allocate(Integer.BYTES);
                Graph graph = fillAndDownload(word, sum)) {
            word.asInts().copyFrom(new int[] {7});
            HeldStreams.hold(sim, stream);
            stream.download(sum, 0, word.bytes()); // queued behind the busy GPU
            Interposer.Stop inWait = interposer.stopBefore("cuEventSynchronize").onThread("reader");
            Background<Integer> reader = Background.call("reader", () -> read(sum));
            inWait.awaitArrival(); // the reader waits for the download, under the buffer's transfer lock
            Background<GraphExec> maker = Background.call("maker", graph::instantiate);
            assertTrue(maker.awaitFinishedOrWaiting(), "instantiating a graph that holds the buffer waited for a "
                    + "host read of it");
            try (GraphExec exec = maker.join()) {
                inWait.release();
                HeldStreams.release(sim, stream);
                assertEquals(7, reader.join());
                exec.launch(stream);
                assertEquals(42, read(sum));
            }
        }
        ctx.reap();
        assertEquals(List.of(), sim.gpu.violations());
    }
}
