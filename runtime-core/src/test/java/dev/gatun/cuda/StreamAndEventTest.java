package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.Simulated;
import java.util.List;
import org.junit.jupiter.api.Test;

class StreamAndEventTest {

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();

    @Test
    void prioritiesOutsideTheDevicesRangeAreRejectedWithTheRange() {
        assertEquals(0, ctx.leastStreamPriority());
        assertEquals(-5, ctx.greatestStreamPriority());
        try (Stream high = ctx.createStream(-5)) {
            assertEquals(-5, high.priority());
        }
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> ctx.createStream(1));
        assertTrue(e.getMessage().contains("-5 (highest) .. 0 (lowest)"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> ctx.createStream(-6));
    }

    @Test
    void queryAndSynchronizeFollowTheQueuedWork() {
        try (Stream s = ctx.createStream(); DeviceBuffer b = ctx.allocate(8)) {
            assertTrue(s.query());
            sim.gpu.hold(s.handle());
            s.memset(b.bytes(), (byte) 1);
            assertFalse(s.query());
            s.synchronize();
            assertTrue(s.query());
        }
    }

    @Test
    void aStreamClosedWithQueuedWorkIsDestroyedAfterThatWork() {
        Stream s = ctx.createStream();
        java.lang.foreign.MemorySegment handle = s.handle();
        DeviceBuffer b = ctx.allocate(8);
        sim.gpu.hold(handle);
        s.memset(b.bytes(), (byte) 1);
        int streamsBefore = sim.gpu.liveStreams();
        s.close();
        assertThrows(IllegalStateException.class, () -> s.memset(b.bytes(), (byte) 2));
        ctx.reap();
        assertEquals(streamsBefore, sim.gpu.liveStreams(), "still draining");
        sim.gpu.release(handle);
        ctx.reap();
        assertEquals(streamsBefore - 1, sim.gpu.liveStreams());
        b.close();
        assertEquals(List.of(), sim.gpu.violations());
    }

    @Test
    void contextStreamsCannotBeClosedByUsers() {
        ctx.computeStream().close();
        ctx.copyStream().close();
        assertFalse(ctx.computeStream().isClosed());
        assertTrue(ctx.computeStream() != ctx.copyStream());
    }

    @Test
    void eventsRecordQueryAndTime() {
        try (Stream s = ctx.createStream(); Event start = ctx.createTimingEvent(); Event end = ctx.createTimingEvent();
                Event fence = ctx.createEvent()) {
            start.record(s);
            sim.gpu.hold(s.handle());
            end.record(s);
            fence.record(s);
            assertFalse(end.query());
            fence.synchronize(); // waits for the work before the fence's record, the end's record included
            assertTrue(fence.query());
            assertEquals(0.5f, end.elapsedMillis(start), 1e-6f);
            assertThrows(IllegalArgumentException.class, () -> fence.elapsedMillis(start));
        }
    }

    @Test
    void elapsedTimeIsMeasuredWithTheSecondVersionWhereTheDriverHasItElseTheFirst() {
        for (int version : new int[] {12040, 12080}) {
            Simulated sim = new Simulated(new FakeDriverApi().version(version));
            CudaContext c = sim.context();
            try (Stream s = c.createStream(); Event a = c.createTimingEvent(); Event b = c.createTimingEvent()) {
                a.record(s);
                b.record(s);
                sim.faults.countCalls();
                assertTrue(b.elapsedMillis(a) >= 0);
                boolean second = version >= 12080;
                assertEquals(second ? 0 : 1, sim.faults.calls("cuEventElapsedTime"), "on " + version);
                assertEquals(second ? 1 : 0, sim.faults.calls("cuEventElapsedTime_v2"), "on " + version);
            }
        }
    }

    @Test
    void anotherStreamWaitsForAnEventWithoutBlockingTheHost() {
        try (Stream producer = ctx.createStream(); Stream consumer = ctx.createStream(); Event ready = ctx.createEvent();
                DeviceBuffer b = ctx.allocate(4)) {
            sim.gpu.hold(producer.handle());
            producer.memset(b.bytes(), (byte) 7);
            ready.record(producer);
            consumer.waitFor(ready);
            consumer.memset(b.bytes().slice(0, 1), (byte) 1);
            assertFalse(consumer.query(), "the consumer waits for the producer's event");
            sim.gpu.release(producer.handle());
            assertTrue(consumer.query());
            byte[] out = new byte[4];
            b.bytes().copyTo(out);
            assertEquals(1, out[0], "the consumer's write came after the producer's");
            assertEquals(7, out[3]);
        }
    }

    @Test
    void fencesAreConsumedAtMostOnceAndReturnTheirEventToThePool() {
        try (Stream a = ctx.createStream(); Stream b = ctx.createStream()) {
            Fence f = a.recordFence();
            assertTrue(f.isComplete());
            b.waitFor(f);
            b.waitFor(f);
            f.close();
            assertTrue(f.isConsumed());
            Fence g = a.recordFence();
            g.close();
            b.waitFor(g); // closed: nothing to wait for
        }
        assertEquals(List.of(), sim.gpu.violations());
    }
}
