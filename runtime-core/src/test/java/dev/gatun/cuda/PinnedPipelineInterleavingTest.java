package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.gatun.cuda.testing.Background;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.Interposer;
import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.ValueLayout;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Two threads transferring through one pinned buffer on two streams while a third reads it on the
 * host, with the order forced by an {@link Interposer}: neither transfer waits for the GPU, and
 * the read sees the bytes of the last transfer queued before it.
 */
class PinnedPipelineInterleavingTest {

    private static final int POISON = 0xDEAD;

    private final Interposer interposer = Interposer.over(new FakeDriverApi());
    private final Simulated sim = new Simulated(interposer);
    private final CudaContext ctx = sim.context();

    private DeviceBuffer word(int value) {
        DeviceBuffer b = ctx.allocate(Integer.BYTES);
        b.asInts().copyFrom(new int[] {value});
        return b;
    }

    private int queued(Stream s) {
        return sim.gpu.queuedOperations(s.state().handle());
    }

    private static int peek(PinnedBuffer b) {
        return b.memory().view().get(ValueLayout.JAVA_INT, 0);
    }

    /**
     * The second transfer is held inside its copy call, its wait on the first transfer's fence
     * queued: the read must wait for it (the transfer lock), and then waits for its fence, which
     * the GPU reaches only after the first transfer's copy, so the read returns the second's bytes.
     */
    @Test
    void aReadRacingATransferOnAnotherStreamSeesTheLastTransfersBytes() {
        try (PinnedBuffer p = ctx.allocatePinned(Integer.BYTES); DeviceBuffer one = word(1); DeviceBuffer two = word(2);
                Stream a = ctx.createStream(); Stream b = ctx.createStream()) {
            p.segment().set(ValueLayout.JAVA_INT, 0, POISON);
            HeldStreams.hold(sim, a);
            HeldStreams.hold(sim, b);
            Background.run("first", () -> a.download(p, 0, one.bytes())).join();
            assertEquals(2, queued(a), "the first transfer returned with its copy and fence queued on the busy GPU");
            Interposer.Stop inCopy = interposer.stopBefore("cuMemcpyDtoHAsync_v2").onThread("second");
            Background<Void> second = Background.run("second", () -> b.download(p, 0, two.bytes()));
            inCopy.awaitArrival();
            assertEquals(1, queued(b), "the second transfer's wait on the first one's fence is queued before its copy");
            Background<Integer> reader = Background.call("reader", () -> p.segment().get(ValueLayout.JAVA_INT, 0));
            assertFalse(reader.awaitFinishedOrWaiting(), "the read returned " + (reader.finished() ? reader.join() : "")
                    + " while a transfer through the buffer was being queued");
            inCopy.release();
            second.join();
            assertEquals(2, reader.join(), "the read did not see the last transfer's bytes");
            assertEquals(0, queued(a), "the read's one wait, for the second transfer's fence, ran the first transfer");
            assertEquals(0, queued(b));
            assertEquals(List.of("cuEventSynchronize"), sim.gpu.blockingHostWaits(),
                    "only the read waited for the GPU, neither transfer did");
            HeldStreams.release(sim, a);
            HeldStreams.release(sim, b);
            assertEquals(2, peek(p), "the first transfer's copy landed after the second's");
        }
        assertEquals(List.of(), sim.gpu.violations());
    }

    /**
     * The other order: the read is held inside its wait for the first transfer's fence (under the
     * transfer lock), so the second transfer waits for the read, and the read returns the first
     * transfer's bytes, which the second one overwrites only after.
     */
    @Test
    void aTransferRacingAReadWaitsForItAndDoesNotChangeWhatItReads() {
        try (PinnedBuffer p = ctx.allocatePinned(Integer.BYTES); DeviceBuffer one = word(1); DeviceBuffer two = word(2);
                Stream a = ctx.createStream(); Stream b = ctx.createStream()) {
            HeldStreams.hold(sim, a);
            HeldStreams.hold(sim, b);
            Background.run("first", () -> a.download(p, 0, one.bytes())).join();
            Interposer.Stop inWait = interposer.stopBefore("cuEventSynchronize").onThread("reader");
            Background<Integer> reader = Background.call("reader", () -> p.segment().get(ValueLayout.JAVA_INT, 0));
            inWait.awaitArrival();
            Background<Void> second = Background.run("second", () -> b.download(p, 0, two.bytes()));
            assertFalse(second.awaitFinishedOrWaiting(), "a transfer was queued while a read of the buffer was waiting "
                    + "for the transfer before it");
            assertEquals(0, queued(b));
            inWait.release();
            assertEquals(1, reader.join(), "the read saw the first transfer's bytes");
            second.join();
            assertEquals(List.of("cuEventSynchronize"), sim.gpu.blockingHostWaits(), "the second transfer did not wait "
                    + "for the GPU once the read was done");
            assertEquals(2, p.segment().get(ValueLayout.JAVA_INT, 0));
        }
        assertEquals(List.of(), sim.gpu.violations());
    }
}
