package dev.gatun.cuda;

import static dev.gatun.cuda.FillKernel.N;
import static dev.gatun.cuda.FillKernel.expected;
import static dev.gatun.cuda.FillKernel.poisoned;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.Simulated;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The ordering rule of synchronous operations on the simulated driver, where a held stream is a
 * kernel still running: a synchronous copy must return what the work queued before it wrote,
 * whichever stream that work was queued on and however the buffer was named.
 */
class SynchronousOrderingTest {

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();

    SynchronousOrderingTest() {
        FillKernel.load(sim, ctx); // fill(p, n, v): p[i] = v + i
    }

    @AfterEach
    void noViolations() {
        assertEquals(List.of(), sim.gpu.violations());
    }

    /** Holds a stream's work without exporting its handle (Stream.handle() would). */

    @Test
    void aReadWaitsForAKernelOnAStreamClosedBeforeTheRead() {
        try (Kernel fill = ctx.modules().kernel("m", "fill"); DeviceBuffer b = ctx.allocate(4L * N)) {
            b.asInts().copyFrom(poisoned());
            Stream other = ctx.createStream();
            HeldStreams.hold(sim, other); // the kernel is still running when the stream is closed and the buffer read
            fill.launch(other, LaunchConfig.of(1, N), KernelArg.pointer(b), KernelArg.i32(N), KernelArg.i32(7));
            other.close();
            int[] out = new int[N];
            b.asInts().copyTo(out);
            assertArrayEquals(expected(7), out, "the read returned before the kernel of the closed stream finished");
        }
    }

    @Test
    void aReadWaitsForAKernelThatNamedTheBufferOnlyByItsAddress() {
        try (Kernel fill = ctx.modules().kernel("m", "fill"); DeviceBuffer b = ctx.allocate(4L * N)) {
            b.asInts().copyFrom(poisoned());
            Stream other = ctx.createStream();
            HeldStreams.hold(sim, other);
            fill.launch(other, LaunchConfig.of(1, N), KernelArg.address(b.address()), KernelArg.i32(N),
                    KernelArg.i32(-3));
            int[] out = new int[N];
            b.asInts().copyTo(out);
            assertArrayEquals(expected(-3), out, "the read ignored work that reached the buffer through a raw address");
            other.close();
        }
    }

    @Test
    void anUploadDoesNotOverwriteBytesAQueuedCopyStillReads() {
        try (DeviceBuffer src = ctx.allocate(4L * N); DeviceBuffer dst = ctx.allocate(4L * N)) {
            src.asInts().copyFrom(expected(100));
            dst.asInts().copyFrom(poisoned());
            Stream other = ctx.createStream();
            HeldStreams.hold(sim, other);
            other.copy(dst.asInts(), src.asInts()); // queued: reads src once the stream runs
            src.asInts().copyFrom(expected(500)); // must wait for the queued copy's read
            int[] out = new int[N];
            dst.asInts().copyTo(out);
            assertArrayEquals(expected(100), out);
            other.close();
        }
    }

    @Test
    void aReadWithNothingNewQueuedAddsNoDriverCall() {
        try (Kernel fill = ctx.modules().kernel("m", "fill"); DeviceBuffer b = ctx.allocate(4L * N)) {
            Stream compute = ctx.computeStream();
            fill.launch(compute, LaunchConfig.of(1, N), KernelArg.pointer(b), KernelArg.i32(N), KernelArg.i32(1));
            int[] out = new int[N];
            b.asInts().copyTo(out); // orders after the compute stream once
            sim.faults.countCalls();
            b.asInts().copyTo(out);
            long recordsOfARead = sim.faults.calls("cuEventRecord"); // the staging pipeline's own
            assertEquals(0, sim.faults.calls("cuStreamWaitEvent"), "nothing was queued since the last read");
            assertEquals(1, sim.faults.calls("cuMemcpyDtoHAsync_v2"));
            sim.faults.clear();
            sim.faults.countCalls();
            fill.launch(compute, LaunchConfig.of(1, N), KernelArg.pointer(b), KernelArg.i32(N), KernelArg.i32(2));
            b.asInts().copyTo(out);
            assertEquals(recordsOfARead + 1, sim.faults.calls("cuEventRecord"), "one fence for the one stream with new work");
            assertEquals(1, sim.faults.calls("cuStreamWaitEvent"));
            assertArrayEquals(expected(2), out);
        }
    }

    @Test
    void theOrderingAddsNothingToALaunch() {
        try (Kernel fill = ctx.modules().kernel("m", "fill"); DeviceBuffer b = ctx.allocate(4L * N)) {
            KernelLaunch launch = fill.prepare(LaunchConfig.of(1, N), KernelArg.pointer(b), KernelArg.i32(N),
                    KernelArg.i32(1));
            launch.launch(ctx.computeStream());
            sim.faults.countCalls();
            launch.launch(ctx.computeStream());
            assertEquals(1, sim.faults.calls("cuLaunchKernel"));
            assertEquals(0, sim.faults.calls("cuEventRecord"));
            assertEquals(0, sim.faults.calls("cuStreamWaitEvent"));
        }
    }

    @Test
    void aStreamIsForgottenOnceDrained() {
        int before = ctx.state().ordering().registered();
        Stream s = ctx.createStream();
        assertEquals(before + 1, ctx.state().ordering().registered());
        s.close();
        ctx.reap();
        assertEquals(before, ctx.state().ordering().registered());
        assertTrue(s.isClosed());
    }
}
