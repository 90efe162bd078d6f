package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Event;
import dev.gatun.cuda.Graph;
import dev.gatun.cuda.GraphExec;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.KernelLaunch;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.PinnedBuffer;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.StreamCapture;
import dev.gatun.cuda.junit.RequiresGpu;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The current-context policy of layer 2 (DriverCalls) on a real driver: calls that name a
 * stream or an event (launches, records, queries, waits, async copies, memsets, stream
 * synchronize) do not make the context current, so they must work, with right results, on a
 * thread where no context was ever current, and on a thread where another library made its
 * own context current.
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

    /** Another library's context, made with the driver directly (Gatun never creates one). */
    private static final class ForeignContext implements AutoCloseable {
        private static final Linker LINKER = Linker.nativeLinker();
        private static final SymbolLookup CUDA = SymbolLookup.libraryLookup("libcuda.so.1", Arena.global());
        private final MemorySegment handle;

        /** Creates a context on device 0; the driver makes it current on the calling thread. */
        ForeignContext() throws Throwable {
            MethodHandle create = LINKER.downcallHandle(CUDA.findOrThrow("cuCtxCreate_v4"), FunctionDescriptor.of(
                    ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_INT,
                    ValueLayout.JAVA_INT));
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
                // Safety: out holds the CUcontext; no creation parameters; flags 0; device ordinal 0.
                int r = (int) create.invokeExact(out, MemorySegment.NULL, 0, 0);
                assertEquals(0, r, "cuCtxCreate");
                handle = out.get(ValueLayout.ADDRESS, 0);
            }
        }

        /** The calling thread's current context. */
        static MemorySegment current() throws Throwable {
            MethodHandle get = LINKER.downcallHandle(CUDA.findOrThrow("cuCtxGetCurrent"),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS));
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment out = arena.allocate(ValueLayout.ADDRESS);
                // Safety: out holds one CUcontext.
                assertEquals(0, (int) get.invokeExact(out), "cuCtxGetCurrent");
                return out.get(ValueLayout.ADDRESS, 0);
            }
        }

        @Override
        public void close() {
            MethodHandle destroy = LINKER.downcallHandle(CUDA.findOrThrow("cuCtxDestroy_v2"),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS));
            int r;
            try {
                // Safety: the context this object created; nothing of Gatun's lives in it.
                r = (int) destroy.invokeExact(handle);
            } catch (Throwable e) {
                throw new AssertionError("cuCtxDestroy threw", e);
            }
            assertEquals(0, r, "cuCtxDestroy");
        }
    }

    /**
     * Another library made its own context current on the thread: launches, an async copy and a
     * graph replay that name Gatun's streams run in Gatun's context with right results, and so
     * do a synchronous read and an allocation (which makes Gatun's context current itself).
     */
    @Test
    void launchesCopiesAndReplaysWorkWhileAnotherContextIsCurrent() throws Exception {
        int n = 8191;
        long seed = Gpu.seed();
        float[] in = new float[n];
        float[] expected = new float[n];
        Random r = new Random(seed);
        for (int i = 0; i < n; i++) {
            in[i] = r.nextFloat();
            expected[i] = 5f * (3f * in[i]); // two kernels, each rounding: y = 3x, then z = 5y
        }
        CudaContext ctx = Gpu.context();
        try (Kernel k = Gpu.kernel(SCALE, "scale"); Stream s = ctx.createStream(); DeviceBuffer x = ctx.allocate(4L * n);
                DeviceBuffer y = ctx.allocate(4L * n); DeviceBuffer z = ctx.allocate(4L * n)) {
            x.asFloats().copyFrom(in);
            float[] poison = new float[n];
            Arrays.fill(poison, Float.NaN);
            y.asFloats().copyFrom(poison);
            z.asFloats().copyFrom(poison);
            KernelLaunch times3 = k.prepare(LaunchConfig.covering(n, 128), KernelArg.pointer(y), KernelArg.pointer(x),
                    KernelArg.f32(3f), KernelArg.i32(n));
            KernelLaunch times5 = k.prepare(LaunchConfig.covering(n, 128), KernelArg.pointer(z), KernelArg.pointer(y),
                    KernelArg.f32(5f), KernelArg.i32(n));
            GraphExec replay;
            try (StreamCapture capture = s.beginCapture(CaptureMode.THREAD_LOCAL)) {
                times5.launch(s);
                try (Graph graph = capture.end()) {
                    replay = graph.instantiate();
                }
            }
            float[] viaReplay = new float[n];
            float[] viaCopy = new float[n];
            onAFreshThread(() -> {
                try (ForeignContext other = new ForeignContext()) {
                    assertEquals(other.handle.address(), ForeignContext.current().address(), "the other context is current");
                    times3.launch(s); // y = 3x
                    replay.launch(s); // z = 5y
                    try (DeviceBuffer w = ctx.allocate(4L * n)) { // makes Gatun's context current
                        s.copy(w.asFloats(), z.asFloats());
                        s.synchronize();
                        z.asFloats().copyTo(viaReplay);
                        w.asFloats().copyTo(viaCopy);
                    }
                } catch (Throwable e) {
                    throw new AssertionError(e);
                }
            });
            replay.close();
            assertArrayEquals(expected, viaReplay, "seed=" + seed);
            assertArrayEquals(expected, viaCopy, "seed=" + seed);
        }
    }
}
