package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.memory.AllocationKind;
import dev.gatun.cuda.testing.LogCapture;
import dev.gatun.cuda.testing.Simulated;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The out-of-memory ladder on the simulated driver, whose memory limit makes the device run out
 * for real: each rung is shown to be the one that made room (the allocation succeeds after it
 * and, with the ladder off, fails), the final failure's report, the ladder switched off, and no
 * rung on a thread that captures.
 */
class OutOfMemoryLadderTest {

    private static final long MiB = 1 << 20;
    private static final int OUT_OF_MEMORY = CudaDriver.CUDA_ERROR_OUT_OF_MEMORY();
    private static final List<String> SYNCHRONIZING = List.of("cuCtxSynchronize", "cuStreamSynchronize",
            "cuEventSynchronize");

    private final Simulated sim = new Simulated();
    private CudaContext ctx;

    @AfterEach
    void nothingUnsafe() {
        if (ctx != null && !ctx.isClosed()) {
            ctx.close();
        }
        assertEquals(List.of(), sim.gpu.violations());
        assertEquals(List.of(), LogCapture.unexpectedErrors());
    }

    private CudaContext open(boolean ladder) {
        ctx = sim.cuda.device(0).context(ContextOptions.defaults().withDevicePool(new DevicePoolOptions(0, false))
                .withOutOfMemoryLadder(ladder));
        return ctx;
    }

    /** A 2 MiB stream-ordered buffer used on both streams (held), then closed: its free waits in retirement for both fences. */
    private void retireUsedOnTwo(Stream first, Stream second) {
        DeviceBuffer b = first.allocate(2 * MiB);
        HeldStreams.hold(sim, first);
        HeldStreams.hold(sim, second);
        first.memset(b.bytes(), (byte) 1);
        second.memset(b.bytes(), (byte) 2);
        b.close();
        assertEquals(1, ctx.diagnostics().counters().pendingRetirements());
    }

    // ---- rung 1: retirement ----

    @Test
    void anAllocationSucceedsOnlyAfterRetirementRanTheFreeWhoseFencesCompleted() {
        for (boolean ladder : new boolean[] {false, true}) {
            open(ladder);
            sim.gpu.memoryLimit(3 * MiB);
            try (Stream first = ctx.createStream(); Stream second = ctx.createStream()) {
                retireUsedOnTwo(first, second);
                HeldStreams.release(sim, first);
                HeldStreams.release(sim, second); // the fences complete, and nothing reaped since
                sim.faults.countCalls();
                if (!ladder) {
                    CudaException e = assertThrows(CudaException.class, () -> second.allocate(2 * MiB));
                    assertSame(CudaException.class, e.getClass(), "off: the driver's error, as before the ladder");
                    assertEquals(0, ctx.diagnostics().outOfMemoryCounters().climbs());
                } else {
                    second.allocate(2 * MiB).close();
                    OutOfMemoryCounters c = ctx.diagnostics().outOfMemoryCounters();
                    assertEquals(1, c.rescuedByRetirement(), c.toString());
                    assertEquals(1, c.retirementFrees());
                    assertEquals(0, c.trimRuns(), "the climb stopped at the first rung that made room");
                    assertEquals(2, sim.faults.calls("cuMemAllocAsync"), "tried, then retried once");
                    SYNCHRONIZING.forEach(f -> assertEquals(0, sim.faults.calls(f), f + ": nothing to wait for"));
                }
            }
            ctx.close();
            sim.faults.clear();
            sim.gpu.memoryLimit(Long.MAX_VALUE);
        }
    }

    @Test
    void retirementWaitsForTheFencesOfPendingFreesWithoutSynchronizingTheContext() {
        open(true);
        sim.gpu.memoryLimit(3 * MiB);
        try (Stream first = ctx.createStream(); Stream second = ctx.createStream()) {
            retireUsedOnTwo(first, second); // both streams still busy
            sim.faults.countCalls();
            second.allocate(2 * MiB).close();
            OutOfMemoryCounters c = ctx.diagnostics().outOfMemoryCounters();
            assertEquals(1, c.rescuedByRetirement(), c.toString());
            assertTrue(sim.faults.calls("cuEventSynchronize") >= 1, "the host waited for the fences");
            assertEquals(0, sim.faults.calls("cuCtxSynchronize"));
            assertEquals(0, c.synchronizeRuns());
            assertEquals(0, ctx.diagnostics().counters().pendingRetirements());
        }
    }

    // ---- rung 2: trim ----

    @Test
    void anAllocationSucceedsOnlyAfterTheDevicePoolWasTrimmed() {
        ctx = sim.cuda.device(0).context(ContextOptions.defaults()); // the device pool on
        sim.gpu.memoryLimit(4 * MiB);
        ctx.allocate(2 * MiB).close();
        ctx.allocate(MiB).close(); // both kept by the pool: 3 MiB of the device
        assertEquals(3 * MiB, ctx.diagnostics().devicePool().counters().retainedBytes());
        try (DeviceBuffer b = ctx.allocate(3 * MiB)) { // a 3 MiB block: no free list holds one
            assertEquals(3 * MiB, b.byteSize());
        }
        OutOfMemoryCounters c = ctx.diagnostics().outOfMemoryCounters();
        assertEquals(1, c.rescuedByTrim(), c.toString());
        assertEquals(3 * MiB, c.trimmedBytes());
        assertEquals(0, c.synchronizeRuns());
        assertEquals(1, ctx.diagnostics().devicePool().counters().trims());
    }

    @Test
    void aStreamOrderedAllocationSucceedsOnlyAfterAMemoryPoolWasTrimmedToItsReleaseThreshold() {
        open(true);
        sim.gpu.memoryLimit(4 * MiB);
        try (MemoryPool pool = ctx.createMemoryPool(MemoryPoolOptions.defaults()); Stream s = ctx.createStream()) {
            pool.allocate(s, 3 * MiB).close(); // freed in stream order; the pool keeps its 4 MiB reserved
            assertEquals(4 * MiB, pool.usage().reservedBytes());
            s.allocate(2 * MiB).close();
            assertEquals(0, pool.usage().reservedBytes(), "trimmed to its release threshold, 0");
            OutOfMemoryCounters c = ctx.diagnostics().outOfMemoryCounters();
            assertEquals(1, c.rescuedByTrim(), c.toString());
            assertEquals(4 * MiB, c.trimmedBytes());
        }
    }

    @Test
    void withTheLadderOffTheDevicePoolStillTrimsItselfAndTriesOnceMoreAsBefore() {
        ctx = sim.cuda.device(0).context(ContextOptions.defaults().withOutOfMemoryLadder(false));
        assertFalse(ctx.options().outOfMemoryLadder());
        sim.gpu.memoryLimit(4 * MiB);
        ctx.allocate(2 * MiB).close();
        ctx.allocate(MiB).close();
        sim.faults.countCalls();
        ctx.allocate(3 * MiB).close();
        assertEquals(2, sim.faults.calls("cuMemAlloc_v2"), "refused, then allocated after the pool's trim");
        assertEquals(1, ctx.diagnostics().devicePool().counters().trims());
        CudaException e = assertThrows(CudaException.class, () -> ctx.allocate(5 * MiB));
        assertSame(CudaException.class, e.getClass(), "the driver's error, no report");
        assertEquals(4, sim.faults.calls("cuMemAlloc_v2"), "one trim and one more try, no more");
        assertEquals(0, sim.faults.calls("cuCtxSynchronize"));
        assertEquals(new OutOfMemoryCounters(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), ctx.diagnostics().outOfMemoryCounters());
    }

    // ---- rung 3: synchronize ----

    @Test
    void anAllocationSucceedsOnlyAfterASynchronizeRanAFreeQueuedBehindBusyWork() {
        for (boolean ladder : new boolean[] {false, true}) {
            open(ladder);
            sim.gpu.memoryLimit(3 * MiB);
            try (Stream busy = ctx.createStream(); Stream other = ctx.createStream()) {
                DeviceBuffer b = busy.allocate(2 * MiB);
                HeldStreams.hold(sim, busy);
                busy.memset(b.bytes(), (byte) 1);
                b.close(); // freed in the busy stream's order, behind the memset: no retirement to run
                assertEquals(0, ctx.diagnostics().counters().pendingRetirements());
                sim.faults.countCalls();
                if (!ladder) {
                    assertSame(CudaException.class, assertThrows(CudaException.class, () -> other.allocate(2 * MiB))
                            .getClass());
                } else {
                    other.allocate(2 * MiB).close();
                    OutOfMemoryCounters c = ctx.diagnostics().outOfMemoryCounters();
                    assertEquals(1, c.rescuedBySynchronize(), c.toString());
                    assertEquals(1, sim.faults.calls("cuCtxSynchronize"), "no capture anywhere: the whole context");
                    assertEquals(2, sim.faults.calls("cuMemAllocAsync"), "the rungs that freed nothing were not retried");
                }
            }
            ctx.close();
            sim.faults.clear();
            sim.gpu.memoryLimit(Long.MAX_VALUE);
        }
    }

    @ParameterizedTest
    @EnumSource(value = CaptureMode.class, names = {"GLOBAL", "THREAD_LOCAL"})
    void whileAnotherThreadCapturesTheContextIsNotSynchronizedButGatunsStreamsAreWaitedFor(CaptureMode mode)
            throws Exception {
        open(true);
        sim.gpu.memoryLimit(3 * MiB);
        try (Stream busy = ctx.createStream(); Stream other = ctx.createStream(); Stream captured = ctx.createStream();
                DeviceBuffer target = ctx.allocate(16)) {
            DeviceBuffer b = busy.allocate(2 * MiB);
            HeldStreams.hold(sim, busy);
            // Its free is all the busy stream holds: a free flags nothing for synchronous operations,
            // and the synchronize below must wait for it all the same.
            b.close();
            CountDownLatch begun = new CountDownLatch(1);
            CountDownLatch allocated = new CountDownLatch(1);
            CompletableFuture<Graph> capture = CompletableFuture.supplyAsync(() -> {
                try (StreamCapture c = captured.beginCapture(mode)) {
                    begun.countDown();
                    captured.memset(target.bytes(), (byte) 0);
                    await(allocated);
                    return c.end();
                }
            });
            await(begun);
            sim.faults.countCalls();
            try {
                other.allocate(2 * MiB).close();
            } finally {
                allocated.countDown(); // the capture ends whatever happened here
            }
            OutOfMemoryCounters c = ctx.diagnostics().outOfMemoryCounters();
            assertEquals(1, c.rescuedBySynchronize(), c.toString());
            assertEquals(0, sim.faults.calls("cuCtxSynchronize"), "a context-wide synchronize would invalidate the capture");
            if (mode == CaptureMode.GLOBAL) {
                assertEquals(0, sim.faults.calls("cuEventSynchronize") + sim.faults.calls("cuDeviceGraphMemTrim"),
                        "nothing that may synchronize while the global capture holds the gate");
            }
            assertTrue(sim.faults.calls("cuStreamSynchronize") >= 1, "the synchronous stream, after every stream");
            try (Graph g = capture.get(10, TimeUnit.SECONDS)) {
                assertNotNull(g, "the capture ended, not invalidated");
            }
        }
    }

    // ---- the final failure and its report ----

    @Test
    void withoutLeakTrackingTheReportSaysHowToListTheAllocations() {
        open(true);
        sim.gpu.memoryLimit(MiB);
        OutOfDeviceMemoryException e = assertThrows(OutOfDeviceMemoryException.class, () -> ctx.allocate(2 * MiB));
        assertEquals(List.of(), e.report().largestAllocations());
        assertTrue(e.getMessage().contains("withLeakTracking(true)"), e.getMessage());
        assertEquals(MiB, ctx.diagnostics().memoryReport().deviceFreeBytes(), "a report can be taken at any time");
    }

    // ---- every allocation kind goes through it ----

    @Test
    void pinnedGrowableAndPoolAllocationsAndGraphInstantiationClimbTheLadder() {
        open(true);
        try (Stream s = ctx.createStream(); MemoryPool pool = ctx.createMemoryPool(MemoryPoolOptions.defaults());
                GrowableBuffer g = ctx.reserveGrowable(8 * MiB)) {
            sim.faults.replaceOnce("cuMemHostAlloc", OUT_OF_MEMORY);
            ctx.allocatePinned(64).close();
            sim.faults.replaceOnce("cuMemAllocFromPoolAsync", OUT_OF_MEMORY);
            pool.allocate(s, MiB).close();
            sim.faults.replaceOnce("cuMemCreate", OUT_OF_MEMORY);
            g.grow(2 * MiB);
            try (Graph graph = graphWithMemoryNodes(s)) {
                sim.faults.replaceOnce("cuGraphInstantiateWithFlags", OUT_OF_MEMORY);
                graph.instantiate().close();
            }
            OutOfMemoryCounters c = ctx.diagnostics().outOfMemoryCounters();
            assertEquals(4, c.climbs(), c.toString());
            assertEquals(4, c.rescuedByRetirement() + c.rescuedByTrim() + c.rescuedBySynchronize(), c.toString());
            try (Graph plain = ctx.createGraph(); DeviceBuffer b = pool.allocate(s, 64)) {
                plain.addMemset(b.bytes(), (byte) 0);
                sim.faults.replaceOnce("cuGraphInstantiateWithFlags", OUT_OF_MEMORY);
                CudaException e = assertThrows(CudaException.class, plain::instantiate);
                assertSame(CudaException.class, e.getClass(), "no memory nodes: not an allocation, not climbed");
            }
            assertEquals(4, ctx.diagnostics().outOfMemoryCounters().climbs());
        }
    }

    private Graph graphWithMemoryNodes(Stream s) {
        try (StreamCapture capture = s.beginCapture(CaptureMode.THREAD_LOCAL)) {
            DeviceBuffer t = s.allocate(4096);
            s.memset(t.bytes(), (byte) 1);
            t.close(); // a free node
            Graph graph = capture.end();
            assertTrue(graph.hasMemoryNodes());
            return graph;
        }
    }

    @Test
    void aGrowthSucceedsAfterTheLadderRanAFreeQueuedBehindBusyWork() {
        open(true);
        sim.gpu.memoryLimit(4 * MiB);
        try (Stream busy = ctx.createStream(); GrowableBuffer g = ctx.reserveGrowable(8 * MiB)) {
            DeviceBuffer b = busy.allocate(3 * MiB);
            HeldStreams.hold(sim, busy);
            busy.memset(b.bytes(), (byte) 1);
            b.close();
            g.grow(2 * MiB);
            assertEquals(2 * MiB, g.counters().mappedBytes());
            assertEquals(1, ctx.diagnostics().outOfMemoryCounters().rescuedBySynchronize());
        }
    }

    // ---- where the ladder does not run ----

    @ParameterizedTest
    @EnumSource(CaptureMode.class)
    void nothingOfTheLadderRunsOnAThreadThatCaptures(CaptureMode mode) {
        open(true);
        sim.gpu.memoryLimit(3 * MiB);
        try (Stream captured = ctx.createStream(); Stream other = ctx.createStream()) {
            DeviceBuffer pending = other.allocate(2 * MiB);
            HeldStreams.hold(sim, other);
            other.memset(pending.bytes(), (byte) 1);
            pending.close(); // a free a synchronize would run
            try (StreamCapture capture = captured.beginCapture(mode)) {
                sim.faults.countCalls();
                OutOfDeviceMemoryException e = assertThrows(OutOfDeviceMemoryException.class,
                        () -> other.allocate(2 * MiB));
                assertEquals(Set.of("cuMemAllocAsync", "cuStreamIsCapturing", "cuGetErrorString"),
                        sim.faults.counts().keySet(), "the allocation, its capture check and its error's description "
                                + "only: no rung, and a report that asks the driver nothing");
                assertEquals(-1, e.report().deviceFreeBytes());
                OutOfMemoryCounters c = ctx.diagnostics().outOfMemoryCounters();
                assertEquals(1, c.skippedInCapture());
                assertEquals(0, c.retirementRuns() + c.trimRuns() + c.synchronizeRuns());
                capture.end().close(); // not invalidated
            }
        }
    }

    @Test
    void anAllocationNodeInACaptureIsNotRetried() {
        open(true);
        try (Stream s = ctx.createStream(); StreamCapture capture = s.beginCapture(CaptureMode.THREAD_LOCAL)) {
            sim.faults.replaceOnce("cuMemAllocAsync", OUT_OF_MEMORY);
            assertSame(CudaException.class, assertThrows(CudaException.class, () -> s.allocate(MiB)).getClass());
            assertEquals(0, ctx.diagnostics().outOfMemoryCounters().climbs());
            capture.abort();
        }
    }

    @Test
    void theLadderRefusesToRunUnderAStreamsLock() {
        open(true);
        try (Stream s = ctx.createStream()) {
            CudaException oom = new CudaException(OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "", "test", 0);
            synchronized (s.state().lock()) {
                IllegalStateException e = assertThrows(IllegalStateException.class,
                        () -> ctx.ladder().retry(oom, AllocationKind.STREAM_ORDERED, 1, () -> "retried"));
                assertSame(oom, e.getCause());
                assertTrue(e.getMessage().contains("stream protocol"), e.getMessage());
            }
            assertEquals("retried", ctx.ladder().retry(oom, AllocationKind.STREAM_ORDERED, 1, () -> "retried"),
                    "outside the lock it climbs, and the retry after its last rung runs");
            assertFalse(ctx.diagnostics().outOfMemoryCounters().failures() > 0);
        }
    }

    @Test
    void anErrorOtherThanOutOfMemoryIsNotClimbed() {
        open(true);
        sim.faults.replaceOnce("cuMemAlloc_v2", CudaDriver.CUDA_ERROR_INVALID_VALUE());
        CudaException e = assertThrows(CudaException.class, () -> ctx.allocate(MiB));
        assertEquals(CudaDriver.CUDA_ERROR_INVALID_VALUE(), e.result());
        assertEquals(0, ctx.diagnostics().outOfMemoryCounters().climbs());
    }

    private static void await(CountDownLatch latch) {
        try {
            if (!latch.await(10, TimeUnit.SECONDS)) {
                throw new AssertionError("the other thread did not get there");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
