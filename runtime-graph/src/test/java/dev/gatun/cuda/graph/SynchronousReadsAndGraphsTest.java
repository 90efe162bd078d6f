package dev.gatun.cuda.graph;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CaptureActiveException;
import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.ModuleImage;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.testing.FakeKernel;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Synchronous reads against graph work on the simulated driver, where held streams are a busy
 * GPU: a read waits for replays on any stream and for work queued before a capture began, and
 * a read or stream synchronize that would invalidate one's own capture is refused up front.
 */
class SynchronousReadsAndGraphsTest {

    private static final int N = 32;
    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();
    private final CudaGraphs graphs = CudaGraphs.create(ctx);

    SynchronousReadsAndGraphsTest() {
        // add(p, n, v): p[i] += v
        sim.gpu.kernelBody("add", FakeKernel.ADD);
        ctx.modules().load("m", ModuleImage.ptx("add.ptx", Ptx.module("add", "u64", "u32", "u32")));
    }

    @AfterEach
    void noViolations() {
        graphs.close();
        assertEquals(List.of(), sim.gpu.violations());
    }

    private static int[] ramp(int plus) {
        int[] a = new int[N];
        Arrays.setAll(a, i -> i + plus);
        return a;
    }

    private static int[] read(DeviceBuffer b) {
        int[] out = new int[N];
        b.asInts().copyTo(out);
        return out;
    }

    @Test
    void aReadWaitsForAReplayOnAnotherStreamThanTheCapture() {
        GraphSlot slot = graphs.registerGroup("o").slot("s");
        Stream captureOn = ctx.createStream();
        Stream replayOn = ctx.createStream();
        try (Kernel add = ctx.modules().kernel("m", "add"); DeviceBuffer b = ctx.allocate(4L * N)) {
            b.asInts().copyFrom(ramp(0));
            slot.beginCapture(captureOn, CaptureMode.THREAD_LOCAL);
            add.launch(captureOn, LaunchConfig.of(1, N), KernelArg.pointer(b), KernelArg.i32(N), KernelArg.i32(1000));
            slot.endCapture();
            captureOn.close(); // the graph is replayed elsewhere; the buffer lists no stream it runs on
            ctx.reap();
            for (int round = 1; round <= 3; round++) {
                sim.gpu.holdAll(); // the replay is still running when the read is issued
                slot.replay(replayOn);
                assertArrayEquals(ramp(1000 * round), read(b), "read " + round + " returned before the replay finished");
            }
            assertTrue(slot.reset());
        } finally {
            replayOn.close();
        }
    }

    @Test
    void aReadWaitsForWorkQueuedBeforeACaptureBeganOnItsStream() {
        GraphSlot slot = graphs.registerGroup("o").slot("s");
        Stream stream = ctx.createStream();
        try (Kernel add = ctx.modules().kernel("m", "add"); DeviceBuffer b = ctx.allocate(4L * N);
                DeviceBuffer other = ctx.allocate(4L * N)) {
            b.asInts().copyFrom(ramp(0));
            sim.gpu.holdAll();
            add.launch(stream, LaunchConfig.of(1, N), KernelArg.pointer(b), KernelArg.i32(N), KernelArg.i32(7));
            slot.beginCapture(stream, CaptureMode.THREAD_LOCAL); // the kernel above is still running
            add.launch(stream, LaunchConfig.of(1, N), KernelArg.pointer(other), KernelArg.i32(N), KernelArg.i32(1));
            assertArrayEquals(ramp(7), read(b), "the read did not wait for the work queued before the capture");
            slot.endCapture();
            assertTrue(slot.reset());
        } finally {
            stream.close();
        }
    }

    @Test
    void aSynchronousReadDuringOnesOwnGlobalCaptureIsRefusedAndTheCaptureSurvives() {
        GraphSlot slot = graphs.registerGroup("o").slot("s");
        Stream stream = ctx.createStream();
        try (Kernel add = ctx.modules().kernel("m", "add"); DeviceBuffer b = ctx.allocate(4L * N)) {
            b.asInts().copyFrom(ramp(0));
            slot.beginCapture(stream, CaptureMode.GLOBAL);
            add.launch(stream, LaunchConfig.of(1, N), KernelArg.pointer(b), KernelArg.i32(N), KernelArg.i32(5));
            sim.faults.countCalls();
            CaptureActiveException read = assertThrows(CaptureActiveException.class, () -> read(b));
            assertTrue(read.getMessage().contains("global mode"), read.getMessage());
            CaptureActiveException sync = assertThrows(CaptureActiveException.class, stream::synchronize);
            assertTrue(sync.getMessage().contains("capturing"), sync.getMessage());
            assertEquals(0, sim.faults.calls("cuMemcpyDtoHAsync_v2"), "refused before any driver call");
            assertEquals(0, sim.faults.calls("cuStreamSynchronize"));
            slot.endCapture();
            slot.replay(stream);
            assertArrayEquals(ramp(5), read(b), "the capture was not invalidated");
            assertTrue(slot.reset());
        } finally {
            stream.close();
        }
    }
}
