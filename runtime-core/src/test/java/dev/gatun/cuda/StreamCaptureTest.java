package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.FakeKernel;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Stream capture on the simulated driver: what a capture records and holds, the gate a
 * global-mode capture holds, and how an invalidated or aborted capture leaves nothing behind.
 */
class StreamCaptureTest {

    private static final int INVALIDATED = 901; // CUDA_ERROR_STREAM_CAPTURE_INVALIDATED

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();
    private final Stream stream = ctx.createStream();
    private final Kernel add;

    StreamCaptureTest() {
        // add(p, n, v): p[i] += v
        sim.gpu.kernelBody("add", FakeKernel.ADD);
        ctx.modules().load("m", ModuleImage.ptx("add.ptx", Ptx.module("add", "u64", "u32", "u32")));
        add = ctx.modules().kernel("m", "add");
    }

    @AfterEach
    void nothingLeftOrMisused() {
        add.close();
        stream.close();
        ctx.close(); // refuses while a graph, executable or buffer is still open
        assertEquals(List.of(), sim.gpu.violations());
        assertEquals(0, sim.gpu.liveGraphs());
        assertEquals(0, sim.gpu.liveGraphExecs());
    }

    /** Runs {@code work} on a new thread and returns what it threw (null when nothing). */
    private static Throwable onAnotherThread(Runnable work) throws InterruptedException {
        Throwable[] thrown = new Throwable[1];
        Thread t = new Thread(() -> {
            try {
                work.run();
            } catch (Throwable e) {
                thrown[0] = e; // handed to the test thread, which asserts on it
            }
        }, "other-thread");
        t.start();
        t.join();
        return thrown[0];
    }

    @Test
    void aThreadLocalCaptureCannotBeEndedOrAbortedFromAnotherThreadAndStaysOpenForItsOwn() throws InterruptedException {
        try (DeviceBuffer v = ctx.allocate(16); StreamCapture capture = stream.beginCapture(CaptureMode.THREAD_LOCAL)) {
            addOn(stream, v, 1);
            Throwable end = onAnotherThread(capture::end);
            assertTrue(end instanceof IllegalStateException && end.getMessage().contains("only that thread can end or abort it"),
                    () -> String.valueOf(end));
            Throwable abort = onAnotherThread(capture::abort);
            assertTrue(abort instanceof IllegalStateException, () -> String.valueOf(abort));
            assertTrue(capture.isOpen(), "refused before the driver: the capture goes on");
            capture.end().close(); // its own thread still ends it
            assertFalse(capture.isOpen());
        }
    }

    @Test
    void aRelaxedCaptureCanBeEndedFromAnotherThread() throws InterruptedException {
        try (DeviceBuffer v = ctx.allocate(16)) {
            StreamCapture capture = stream.beginCapture(CaptureMode.RELAXED);
            addOn(stream, v, 1);
            Graph[] graph = new Graph[1];
            assertEquals(null, onAnotherThread(() -> graph[0] = capture.end()));
            graph[0].close();
        }
    }

    private void addOn(Stream s, DeviceBuffer v, int value) {
        add.launch(s, LaunchConfig.of(1, 4), KernelArg.pointer(v), KernelArg.i32(4), KernelArg.i32(value));
    }

    private static int[] read(DeviceBuffer b) {
        int[] out = new int[4];
        b.asInts().copyTo(out);
        return out;
    }

    /** Whether another thread's synchronizing call gets through the gate at once. */
    private boolean gateOpen() throws Exception {
        Duration before = ctx.gateTimeout();
        ctx.setGateTimeout(Duration.ZERO);
        try {
            CompletableFuture.supplyAsync(() -> ctx.allocate(8)).join().close();
            return true;
        } catch (CompletionException e) {
            assertInstanceOf(CaptureActiveException.class, e.getCause());
            return false;
        } finally {
            ctx.setGateTimeout(before);
        }
    }

    @Test
    void workQueuedDuringACaptureIsRecordedAndRunsOnlyWhenLaunched() throws Exception {
        try (DeviceBuffer v = ctx.allocate(16)) {
            v.asInts().copyFrom(new int[] {1, 2, 3, 4});
            Graph graph;
            try (StreamCapture capture = stream.beginCapture(CaptureMode.THREAD_LOCAL)) {
                assertTrue(capture.isOpen());
                addOn(stream, v, 10);
                graph = capture.end();
                assertFalse(capture.isOpen());
            }
            assertArrayEquals(new int[] {1, 2, 3, 4}, read(v), "recorded, not run");
            assertEquals(1, ctx.diagnostics().liveOwners(OwnerKind.GRAPH));
            try (graph; GraphExec exec = graph.instantiate()) {
                assertEquals(1, ctx.diagnostics().liveOwners(OwnerKind.GRAPH_EXEC));
                exec.launch(stream);
                exec.launch(stream);
                assertArrayEquals(new int[] {21, 22, 23, 24}, read(v));
            }
            assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.GRAPH));
            assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.GRAPH_EXEC));
        }
        ctx.reap();
        assertEquals(0, sim.gpu.liveGraphs());
        assertEquals(0, sim.gpu.liveGraphExecs());
    }

    @Test
    void aGlobalCaptureHoldsTheGateUntilItEndsAndOtherModesDoNot() throws Exception {
        StreamCapture global = stream.beginCapture(CaptureMode.GLOBAL);
        assertFalse(gateOpen(), "another thread's allocation waits for the global capture");
        CompletableFuture<DeviceBuffer> waiting = CompletableFuture.supplyAsync(() -> ctx.allocate(8));
        assertFalse(waiting.isDone(), "waits while the capture is open");
        global.end().close();
        waiting.get().close();
        assertTrue(gateOpen());
        for (CaptureMode mode : new CaptureMode[] {CaptureMode.THREAD_LOCAL, CaptureMode.RELAXED}) {
            try (StreamCapture capture = stream.beginCapture(mode)) {
                assertTrue(gateOpen(), mode + " does not hold the gate");
                assertEquals(mode, capture.mode());
            }
        }
    }

    @Test
    void anInvalidatedCaptureIsReportedTypedAndHoldsNothing() throws Exception {
        DeviceBuffer v = ctx.allocate(16);
        int allocations = sim.gpu.liveDeviceAllocations();
        StreamCapture capture = stream.beginCapture(CaptureMode.GLOBAL);
        addOn(stream, v, 1);
        sim.gpu.invalidateCapture(stream.state().handle());

        CaptureInvalidatedException e = assertThrows(CaptureInvalidatedException.class, capture::end);
        assertEquals(INVALIDATED, assertInstanceOf(CudaException.class, e.getCause()).result());
        assertTrue(e.getMessage().contains("global-mode"), e.getMessage());
        assertFalse(capture.isOpen());
        assertThrows(IllegalStateException.class, capture::end);
        assertTrue(gateOpen(), "the gate is released");
        assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.GRAPH));
        v.close();
        ctx.reap();
        assertEquals(allocations - 1, sim.gpu.liveDeviceAllocations(), "the buffer is not held by anything");
        stream.beginCapture(CaptureMode.THREAD_LOCAL).abort(); // the stream can capture again
    }

    @Test
    void abortDestroysWhatWasRecordedAndDropsEveryHold() throws Exception {
        DeviceBuffer v = ctx.allocate(16);
        int allocations = sim.gpu.liveDeviceAllocations();
        StreamCapture capture = stream.beginCapture(CaptureMode.GLOBAL);
        addOn(stream, v, 1);
        v.close();
        ctx.reap();
        assertEquals(allocations, sim.gpu.liveDeviceAllocations(), "held by the capture");

        capture.abort();
        assertFalse(capture.isOpen());
        assertThrows(IllegalStateException.class, capture::abort);
        capture.close(); // nothing left to abort
        assertTrue(gateOpen());
        ctx.reap();
        assertEquals(allocations - 1, sim.gpu.liveDeviceAllocations(), "no hold is left");
        assertEquals(0, sim.gpu.liveGraphs(), "what was recorded is destroyed");
        assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.GRAPH));
    }

    @Test
    void abortingAnInvalidatedCaptureIsQuietAndCloseAbortsAnOpenCapture() throws Exception {
        StreamCapture capture = stream.beginCapture(CaptureMode.GLOBAL);
        sim.gpu.invalidateCapture(stream.state().handle());
        capture.abort();
        assertTrue(gateOpen());

        try (DeviceBuffer v = ctx.allocate(16)) {
            try (StreamCapture open = stream.beginCapture(CaptureMode.THREAD_LOCAL)) {
                addOn(stream, v, 1);
            }
        }
        ctx.reap();
        assertEquals(0, sim.gpu.liveGraphs());
        assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.GRAPH));
    }

    @Test
    void aCaptureListingItsBuffersRefusesOthersBeforeQueueingAnything() {
        try (DeviceBuffer ok = ctx.allocate(16); DeviceBuffer stray = ctx.allocate(16)) {
            StreamCapture capture = stream.beginCapture(CaptureMode.GLOBAL, List.of(ok));
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> addOn(stream, stray, 1));
            assertTrue(e.getMessage().contains("is not one of the buffers"), e.getMessage());
            assertEquals(0, sim.gpu.launches());
            addOn(stream, ok, 1);
            try (Graph graph = capture.end()) {
                assertEquals(1, sim.gpu.liveGraphs());
            }
        }
    }

    @Test
    void aRefusedBeginLeavesTheGateAndTheStreamAsBefore() throws Exception {
        sim.faults.replaceOnce("cuStreamBeginCapture_v2", 1); // CUDA_ERROR_INVALID_VALUE
        CudaException refused = assertThrows(CudaException.class, () -> stream.beginCapture(CaptureMode.GLOBAL));
        assertEquals("cuStreamBeginCapture", refused.operation());
        assertTrue(gateOpen());

        StreamCapture capture = stream.beginCapture(CaptureMode.THREAD_LOCAL);
        IllegalStateException twice = assertThrows(IllegalStateException.class,
                () -> stream.beginCapture(CaptureMode.THREAD_LOCAL));
        assertTrue(twice.getMessage().contains("already capturing"), twice.getMessage());
        IllegalStateException closing = assertThrows(IllegalStateException.class, stream::close);
        assertTrue(closing.getMessage().contains("end or abort the capture first"), closing.getMessage());
        capture.abort();

        Stream closed = ctx.createStream();
        closed.close();
        assertThrows(IllegalStateException.class, () -> closed.beginCapture(CaptureMode.THREAD_LOCAL));
        assertThrows(NullPointerException.class, () -> stream.beginCapture(null));
    }
}
