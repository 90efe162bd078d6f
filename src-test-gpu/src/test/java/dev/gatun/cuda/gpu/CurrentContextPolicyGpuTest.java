package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Event;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.KernelLaunch;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.PinnedBuffer;
import dev.gatun.cuda.Stream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The current-context policy of layer 2 (DriverCalls) on a real driver: calls that name a
 * stream or an event (launches, records, queries, waits, async copies, memsets, stream
 * synchronize) do not make the context current, so they must work, with right results, on a
 * thread where no context was ever current. (The probe behind the policy ran them with another
 * context current; this is the other case.)
 */
@RequiresGpu
class CurrentContextPolicyGpuTest {

    private static final String SCALE = """
            extern "C" __global__ void scale(float* out, const float* in, float a, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) out[i] = a * in[i];
            }
            """;

    /** Runs {@code work} on a new platform thread (one no CUDA context was ever current on) and rethrows its failure. */
    private static void onAFreshThread(Runnable work) throws InterruptedException {
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread t = Thread.ofPlatform().name("no-current-context").start(() -> {
            try {
                work.run();
            } catch (Throwable e) {
                failure.set(e);
            }
        });
        t.join();
        if (failure.get() != null) {
            throw new AssertionError("failed on a thread with no current context", failure.get());
        }
    }

    @Test
    void streamAndEventCallsWorkOnAThreadWithNoCurrentContext() throws Exception {
        int n = (1 << 20) + 5;
        long seed = Gpu.seed();
        float[] data = new float[n];
        Random r = new Random(seed);
        for (int i = 0; i < n; i++) {
            data[i] = r.nextFloat();
        }
        CudaContext ctx = Gpu.context();
        try (Stream s = ctx.createStream(); DeviceBuffer a = ctx.allocate(4L * n); DeviceBuffer b = ctx.allocate(4L * n);
                PinnedBuffer up = ctx.allocatePinned(4L * n); PinnedBuffer down = ctx.allocatePinned(4L * n);
                Event done = ctx.createEvent()) {
            // Warm both pinned buffers here, so that each holds its own fence event before the
            // fresh thread uses it (creating an event would make the context current there).
            s.upload(a.bytes(), up, 0);
            s.download(down, 0, a.bytes());
            down.awaitTransfer();
            MemorySegment.copy(data, 0, up.segment(), ValueLayout.JAVA_FLOAT, 0, n);
            down.segment().fill((byte) 0xFF); // poison: every float reads as NaN

            onAFreshThread(() -> {
                s.upload(a.bytes(), up, 0); // cuMemcpyHtoDAsync + cuEventRecord
                s.memset(b.bytes(), (byte) 0x5A); // cuMemsetD8Async: poison b
                s.fill(b.asFloats(), Float.floatToRawIntBits(Float.NaN)); // cuMemsetD32Async: poison it again
                s.copy(b.bytes(), a.bytes()); // cuMemcpyDtoDAsync
                done.record(s); // cuEventRecord
                s.waitFor(done); // cuStreamWaitEvent
                s.download(down, 0, b.bytes()); // cuMemcpyDtoHAsync + cuEventRecord
                down.awaitTransfer(); // cuEventSynchronize
                done.synchronize();
                assertTrue(done.query(), "the event's work is done");
                assertTrue(s.query(), "the stream is idle");
                s.synchronize(); // cuStreamSynchronize
            });

            float[] out = new float[n];
            MemorySegment.copy(down.segment(), ValueLayout.JAVA_FLOAT, 0, out, 0, n);
            assertArrayEquals(data, out, "seed=" + seed);
        }
    }

    @Test
    void aLaunchFromAThreadWithNoCurrentContextRunsInItsOwnContext() throws Exception {
        int n = 4099;
        long seed = Gpu.seed();
        float[] in = new float[n];
        float[] expected = new float[n];
        Random r = new Random(seed);
        for (int i = 0; i < n; i++) {
            in[i] = r.nextFloat();
            expected[i] = 3f * in[i];
        }
        CudaContext ctx = Gpu.context();
        try (Kernel k = Gpu.kernel(SCALE, "scale"); Stream s = ctx.createStream();
                DeviceBuffer x = ctx.allocate(4L * n); DeviceBuffer y = ctx.allocate(4L * n)) {
            x.asFloats().copyFrom(in);
            float[] poison = new float[n];
            Arrays.fill(poison, Float.NaN);
            y.asFloats().copyFrom(poison);
            KernelLaunch launch = k.prepare(LaunchConfig.covering(n, 128), KernelArg.pointer(y), KernelArg.pointer(x),
                    KernelArg.f32(3f), KernelArg.i32(n));

            onAFreshThread(() -> {
                launch.launch(s);
                s.synchronize();
            });

            float[] out = new float[n];
            y.asFloats().copyTo(out);
            assertArrayEquals(expected, out, "seed=" + seed);
        }
    }
}
