package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.Simulated;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A stream-ordered free asks the driver whether its stream is capturing (cuStreamIsCapturing)
 * only while a capture is possible in the context: one Gatun began and has not ended, or one
 * begun out of Gatun's sight on an exported handle or joined through another context's event.
 */
class CaptureCensusTest {

    private static final String IS_CAPTURING = "cuStreamIsCapturing";

    private final Simulated sim = new Simulated(new FakeDriverApi().deviceCount(2));
    private final CudaContext ctx = sim.context();
    private final Stream stream = ctx.createStream();
    private final Stream other = ctx.createStream();

    @AfterEach
    void closeStreams() {
        other.close();
        stream.close();
    }

    /** How many times freeing a fresh stream-ordered buffer asked the driver about capture. */
    private int queriesOfAStreamOrderedFree() {
        DeviceBuffer b = stream.allocate(256);
        sim.faults.clear();
        sim.faults.countCalls();
        b.close();
        int n = sim.faults.counts().getOrDefault(IS_CAPTURING, 0);
        sim.faults.clear();
        return n;
    }

    @Test
    void theDriverIsAskedOnlyWhileAGatunCaptureLasts() {
        assertEquals(0, queriesOfAStreamOrderedFree());
        try (StreamCapture capture = other.beginCapture(CaptureMode.THREAD_LOCAL)) {
            assertEquals(1, queriesOfAStreamOrderedFree(), "a capture on another stream may have joined this one");
            capture.end().close();
        }
        assertEquals(0, queriesOfAStreamOrderedFree(), "the capture ended");
        StreamCapture aborted = other.beginCapture(CaptureMode.THREAD_LOCAL);
        aborted.abort();
        assertEquals(0, queriesOfAStreamOrderedFree(), "the capture was aborted");
    }

    @Test
    void anExportedHandleMakesEveryLaterFreeAsk() {
        other.handle();
        assertEquals(1, queriesOfAStreamOrderedFree());
        assertEquals(1, queriesOfAStreamOrderedFree(), "code outside Gatun may begin a capture at any time");
    }

    @Test
    void aCaptureBegunOnAnExportedHandleDefersTheFreeToRetirement() {
        DeviceBuffer b = stream.allocate(256);
        sim.gpu.capturing(stream.handle(), true); // as code outside Gatun would, on the exported handle
        sim.faults.countCalls();
        b.close();
        assertEquals(0, sim.faults.counts().getOrDefault("cuMemFreeAsync", 0), "no free is recorded into a capture");
        sim.faults.clear();
        sim.gpu.capturing(stream.handle(), false);
        ctx.synchronize();
        assertEquals(0, sim.gpu.liveDeviceAllocations(), "retirement freed it once the capture was over");
    }

    @Test
    void anAllocationOnAStreamInACaptureGatunDidNotBeginIsRefusedBeforeTheDriver() {
        MemoryPool pool = ctx.createMemoryPool(MemoryPoolOptions.defaults());
        stream.handle(); // exported: code outside Gatun may capture it, or it may join a capture
        sim.gpu.capturing(stream.handle(), true);
        sim.faults.countCalls();
        CaptureActiveException refused = assertThrows(CaptureActiveException.class, () -> stream.allocate(256));
        assertTrue(refused.getMessage().contains("not in a capture Gatun began on it"), refused.getMessage());
        IllegalStateException fromPool = assertThrows(IllegalStateException.class, () -> pool.allocate(stream, 256));
        assertTrue(fromPool.getMessage().contains("is capturing a graph"), fromPool.getMessage());
        assertEquals(0, sim.faults.counts().getOrDefault("cuMemAllocAsync", 0));
        assertEquals(0, sim.faults.counts().getOrDefault("cuMemAllocFromPoolAsync", 0));
        sim.faults.clear();
        sim.gpu.capturing(stream.handle(), false);
        stream.allocate(256).close(); // allowed again once the capture is over
        pool.close();
        ctx.synchronize();
        assertEquals(0, sim.gpu.liveDeviceAllocations());
    }

    @Test
    void aWaitOnAnotherContextsEventMakesLaterFreesAsk() {
        CudaContext second = sim.cuda.device(1).context(ContextOptions.defaults());
        try (Event e = second.createEvent()) {
            e.record(second.computeStream());
            stream.waitFor(e);
            assertEquals(1, queriesOfAStreamOrderedFree());
        }
    }
}
