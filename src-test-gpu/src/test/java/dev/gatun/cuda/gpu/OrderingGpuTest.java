package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.gatun.cuda.CaptureActiveException;
import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Graph;
import dev.gatun.cuda.GraphExec;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.PinnedBuffer;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.StreamCapture;
import dev.gatun.cuda.junit.RequiresGpu;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The ordering rule of synchronous operations on the H200: a read returns what every piece of
 * work queued before it wrote, on any stream, open or closed, eager or replayed. The writer is
 * a kernel that waits for a host flag which another thread sets 200 ms later, so a read that
 * does not wait sees the poison.
 */
@RequiresGpu
class OrderingGpuTest {

    private static final int N = 1 << 16;
    private static final float POISON = Float.NaN;

    /** Sets the flag from another thread after 200 ms. */
    private static Thread releaseLater(PinnedBuffer flag) {
        return Thread.ofVirtual().start(() -> {
            try {
                Thread.sleep(200);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            flag.segment().set(ValueLayout.JAVA_INT, 0, 1);
        });
    }

    private static void poison(DeviceBuffer b) {
        float[] p = new float[N];
        Arrays.fill(p, POISON);
        b.asFloats().copyFrom(p);
    }

    private static void assertAll(float expected, DeviceBuffer b, String why) {
        float[] out = new float[N];
        b.asFloats().copyTo(out);
        for (int i = 0; i < N; i++) {
            if (out[i] != expected) {
                assertEquals(expected, out[i], why + ": element " + i);
            }
        }
    }

    @Test
    void aReadWaitsForAGraphReplayedOnAnotherStream(CudaContext ctx, Stream replayOn) throws InterruptedException {
        Stream captureOn = ctx.createStream();
        float value = new Random(Gpu.seed()).nextFloat() + 1;
        try (Kernel spin = Gpu.kernel(Gpu.SPIN_THEN_FILL, "spin_then_fill"); PinnedBuffer flag = ctx.allocatePinned(4);
                DeviceBuffer b = ctx.allocate(4L * N)) {
            Graph graph;
            try (StreamCapture capture = captureOn.beginCapture(CaptureMode.THREAD_LOCAL)) {
                spin.launch(captureOn, LaunchConfig.of(64, 256), KernelArg.address(flag.segment().address()),
                        KernelArg.pointer(b), KernelArg.f32(value), KernelArg.i64(N));
                graph = capture.end();
            }
            captureOn.close();
            try (graph; GraphExec exec = graph.instantiate()) {
                for (int round = 0; round < 3; round++) {
                    poison(b);
                    flag.segment().set(ValueLayout.JAVA_INT, 0, 0);
                    exec.launch(replayOn);
                    Thread setter = releaseLater(flag);
                    assertAll(value, b, "read " + round + " after a replay on another stream");
                    setter.join();
                }
            }
        }
    }

    @Test
    void aReadWaitsForAKernelOnAStreamClosedBeforeTheRead() throws InterruptedException {
        CudaContext ctx = Gpu.context();
        float value = new Random(Gpu.seed()).nextFloat() + 1;
        try (Kernel spin = Gpu.kernel(Gpu.SPIN_THEN_FILL, "spin_then_fill"); PinnedBuffer flag = ctx.allocatePinned(4);
                DeviceBuffer b = ctx.allocate(4L * N)) {
            poison(b);
            flag.segment().set(ValueLayout.JAVA_INT, 0, 0);
            Stream s = ctx.createStream();
            spin.launch(s, LaunchConfig.of(64, 256), KernelArg.address(flag.segment().address()), KernelArg.pointer(b),
                    KernelArg.f32(value), KernelArg.i64(N));
            s.close();
            Thread setter = releaseLater(flag);
            assertAll(value, b, "read after the writer's stream was closed");
            setter.join();
        }
    }

    @Test
    void aSynchronousReadOrSynchronizeDuringOnesOwnGlobalCaptureIsRefusedAndTheCaptureSurvives(CudaContext ctx,
            Stream s) {
        float value = new Random(Gpu.seed()).nextFloat() + 1;
        try (Kernel spin = Gpu.kernel(Gpu.SPIN_THEN_FILL, "spin_then_fill"); PinnedBuffer flag = ctx.allocatePinned(4);
                DeviceBuffer b = ctx.allocate(4L * N)) {
            poison(b);
            flag.segment().set(ValueLayout.JAVA_INT, 0, 1);
            try (StreamCapture capture = s.beginCapture(CaptureMode.GLOBAL)) {
                spin.launch(s, LaunchConfig.of(64, 256), KernelArg.address(flag.segment().address()), KernelArg.pointer(b),
                        KernelArg.f32(value), KernelArg.i64(N));
                assertThrows(CaptureActiveException.class, () -> assertAll(value, b, "refused"));
                assertThrows(CaptureActiveException.class, s::synchronize);
                // end() would throw CaptureInvalidatedException had the driver invalidated the capture
                try (Graph graph = capture.end(); GraphExec exec = graph.instantiate()) {
                    exec.launch(s);
                    s.synchronize();
                    assertAll(value, b, "the capture survived the refused calls");
                }
            }
        }
    }
}
