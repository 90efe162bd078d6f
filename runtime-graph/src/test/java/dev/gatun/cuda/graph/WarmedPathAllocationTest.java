package dev.gatun.cuda.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import org.junit.jupiter.api.Test;

/**
 * The warmed paths allocate nothing: a replay (whole or one segment) and a full latch generation
 * (begin, attach, activate, consume by two recipients). Measured with the JVM's per-thread
 * allocation counter over many calls after a warm-up. The bound is less than one byte per call:
 * the smallest object is 16 bytes, so a single allocation per call fails it by a factor of 16 or
 * more, while a one-off allocation by the JVM itself (a few hundred bytes when a compilation lands
 * mid-loop) does not make the test flaky.
 */
class WarmedPathAllocationTest {

    private static final int WARM_UP = 50_000;
    private static final int MEASURED = 100_000;

    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    /** A backend whose launch does nothing but count, so that only the slot's own allocations show. */
    private static final class CountingBackend implements GraphBackend<String> {
        private long next = 1;
        long launches;

        @Override
        public void beginCapture(String stream, CaptureMode mode) {
        }

        @Override
        public MemorySegment endCapture(String stream) {
            return MemorySegment.ofAddress(next++);
        }

        @Override
        public MemorySegment instantiate(MemorySegment graph) {
            return MemorySegment.ofAddress(next++);
        }

        @Override
        public boolean tryUpdate(MemorySegment exec, MemorySegment graph) {
            return true;
        }

        @Override
        public void upload(MemorySegment exec, String stream) {
        }

        @Override
        public void launch(MemorySegment exec, String stream) {
            launches++;
        }

        @Override
        public void destroyGraph(MemorySegment graph) {
        }

        @Override
        public void destroyExec(MemorySegment exec) {
        }
    }

    private static long allocatedBytes() {
        return THREADS.getCurrentThreadAllocatedBytes();
    }

    @Test
    void aWarmedReplayAllocatesNothing() {
        assumeTrue(THREADS.isThreadAllocatedMemorySupported() && THREADS.isThreadAllocatedMemoryEnabled());
        CountingBackend backend = new CountingBackend();
        GraphOwner<String> owner = new GraphLifecycles<>(backend, segment -> { }).registerOwner("session");
        GraphSlot<String> slot = owner.slot("decode");
        for (int i = 0; i < 3; i++) {
            slot.beginCapture("stream", CaptureMode.THREAD_LOCAL);
            slot.endCapture();
        }
        String stream = "stream";
        replay(owner, stream, WARM_UP);

        allocatedBytes();
        long before = allocatedBytes();
        replay(owner, stream, MEASURED);
        long allocated = allocatedBytes() - before;

        assertTrue(allocated < MEASURED, allocated + " bytes allocated by " + MEASURED + " warmed replays");
        assertEquals(4L * (WARM_UP + MEASURED), backend.launches);
    }

    /** Looks the slot up by name each time, as a request would, then replays it two ways. */
    private static void replay(GraphOwner<String> owner, String stream, int times) {
        for (int i = 0; i < times; i++) {
            GraphSlot<String> slot = owner.slot("decode");
            slot.replay(stream);
            slot.replaySegment(i % 3, stream);
        }
    }

    @Test
    void aWarmedLatchGenerationAllocatesNothing() {
        assumeTrue(THREADS.isThreadAllocatedMemorySupported() && THREADS.isThreadAllocatedMemoryEnabled());
        FakeLatchWord word = new FakeLatchWord();
        ValidationLatch latch = new ValidationLatch(word);
        ValidationOwner submitter = latch.register("submitter");
        ValidationOwner recipient = latch.register("recipient");
        int flags = generations(latch, word, submitter, recipient, WARM_UP);

        allocatedBytes();
        long before = allocatedBytes();
        flags |= generations(latch, word, submitter, recipient, MEASURED);
        long allocated = allocatedBytes() - before;

        assertTrue(allocated < MEASURED, allocated + " bytes allocated by " + MEASURED + " warmed generations");
        assertEquals(LatchFlags.OUT_OF_RANGE, flags);
        assertEquals(WARM_UP + MEASURED, word.reads());
    }

    private static int generations(ValidationLatch latch, FakeLatchWord word, ValidationOwner submitter,
            ValidationOwner recipient, int times) {
        int flags = 0;
        for (int i = 0; i < times; i++) {
            long token = latch.begin(submitter);
            latch.attach(submitter, token, recipient);
            latch.activate(submitter, token);
            word.raise(LatchFlags.OUT_OF_RANGE);
            flags |= latch.consume(recipient, token);
            flags |= latch.consume(submitter, token);
        }
        return flags;
    }
}
