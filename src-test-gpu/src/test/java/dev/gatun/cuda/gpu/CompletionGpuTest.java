package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Event;
import dev.gatun.cuda.Fence;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.PinnedBuffer;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.junit.RequiresGpu;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;

/**
 * Stream.onComplete on the H200: 10,000 futures queued behind a kernel that waits for a host
 * flag all complete once it is set, through the driver's real host-function thread and Gatun's
 * one dispatcher, without a thread per future; and the output of a kernel queued before them,
 * on random input into a poisoned output, matches the CPU once they complete. Event.onComplete
 * and Fence.onComplete the same way, through the context's watch streams.
 */
@RequiresGpu
class CompletionGpuTest {

    private static final int FUTURES = 10_000;
    private static final float POISON = Float.intBitsToFloat(0x7FC0DEAD);
    /** Completes each future on Gatun's dispatcher thread, so the count of threads is Gatun's alone. */
    private static final Executor INLINE = Runnable::run;

    static final String SCALE = """
            extern "C" __global__ void scale(float* y, const float* x, float a, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) y[i] = a * x[i]; // one rounding: the CPU's product is the same
            }
            """;

    @Test
    @Tag(GpuTags.HOST_RELEASED_KERNEL)
    void tenThousandFuturesBehindALongKernelCompleteOnOneDispatcherAfterTheKernel(TestReporter reporter)
            throws InterruptedException {
        long seed = Gpu.seed();
        Random random = Gpu.random(seed);
        int n = (1 << 20) + random.nextInt(1000);
        float a = 0.5f + random.nextFloat();
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = random.nextFloat() * 2 - 1;
        }
        String why = "n=" + n + " a=" + a + " seed=" + seed;

        CudaContext ctx = Gpu.context();
        try (Kernel spin = Gpu.kernel(Gpu.SPIN_THEN_FILL, "spin_then_fill"); Kernel scale = Gpu.kernel(SCALE, "scale");
                PinnedBuffer flag = ctx.allocatePinned(4); Stream s = ctx.createStream(); Event kernelDone = ctx.createEvent();
                DeviceBuffer busy = ctx.allocate(4096); DeviceBuffer dx = ctx.allocate(4L * n);
                DeviceBuffer dy = ctx.allocate(4L * n)) {
            dx.asFloats().copyFrom(x);
            s.fill(dy.asFloats(), Float.floatToRawIntBits(POISON));
            s.onComplete(INLINE).join(); // the dispatcher, and the driver's host-function thread, exist from here on

            flag.segment().set(ValueLayout.JAVA_INT, 0, 0);
            spin.launch(s, LaunchConfig.of(1, 32), KernelArg.address(flag.segment().address()), KernelArg.pointer(busy),
                    KernelArg.f32(1f), KernelArg.i64(1024));
            scale.launch(s, LaunchConfig.covering(n, 256), KernelArg.pointer(dy), KernelArg.pointer(dx), KernelArg.f32(a),
                    KernelArg.i32(n));
            kernelDone.record(s);
            // The flag is set once every future is queued, or after 30 s if queueing blocks (a
            // stream's queue is finite, and the spinning kernel holds it): then the early check is skipped.
            CountDownLatch queued = new CountDownLatch(1);
            AtomicBoolean releasedEarly = new AtomicBoolean();
            Thread releaser = Thread.ofPlatform().name("completion-test-releaser").start(() -> {
                try {
                    releasedEarly.set(!queued.await(30, TimeUnit.SECONDS));
                } catch (InterruptedException e) {
                    releasedEarly.set(true);
                }
                flag.segment().set(ValueLayout.JAVA_INT, 0, 1);
            });
            int warm = liveThreads(); // the dispatcher, the driver's callback thread and the releaser
            AtomicInteger early = new AtomicInteger();
            long queueStart = System.nanoTime();
            List<CompletableFuture<Void>> futures = new ArrayList<>(FUTURES);
            for (int i = 0; i < FUTURES; i++) {
                // Runs on the dispatcher (INLINE), never on the driver's thread, so it may query the event.
                futures.add(s.onComplete(INLINE).thenRun(() -> {
                    if (!kernelDone.query()) {
                        early.incrementAndGet();
                    }
                }));
            }
            long queueNanos = System.nanoTime() - queueStart;
            int pendingThreads = liveThreads();
            boolean noneDoneWhileSpinning = futures.stream().noneMatch(CompletableFuture::isDone);
            long pendingCount = ctx.diagnostics().pendingCompletions();
            queued.countDown();

            long waitStart = System.nanoTime();
            CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).join();
            long waitNanos = System.nanoTime() - waitStart;
            releaser.join();
            int after = liveThreads();
            reporter.publishEntry("completions", FUTURES + " futures queued in " + queueNanos / 1000 + " us"
                    + (releasedEarly.get() ? " (the flag was set before all were queued)" : "") + ", all complete "
                    + waitNanos / 1000 + " us after; threads " + warm + " before, " + pendingThreads
                    + " with them pending, " + after + " after");

            assertEquals(0, early.get(), "futures completed before the kernel queued before them " + why);
            if (!releasedEarly.get()) {
                assertTrue(noneDoneWhileSpinning, "a future completed while the kernel before it still waited " + why);
                assertEquals(FUTURES, pendingCount, "pending futures while the kernel waited");
            }
            assertTrue(pendingThreads <= warm && after <= warm,
                    "threads grew: " + warm + " before, " + pendingThreads + " pending, " + after + " after");
            assertEquals(0, ctx.diagnostics().pendingCompletions());
            assertFalse(futures.stream().anyMatch(CompletableFuture::isCompletedExceptionally));

            float[] expected = new float[n];
            for (int i = 0; i < n; i++) {
                expected[i] = a * x[i];
            }
            float[] got = new float[n];
            Arrays.fill(got, POISON);
            dy.asFloats().copyTo(got);
            assertArrayEquals(expected, got, why);
        }
    }

    @Test
    @Tag(GpuTags.HOST_RELEASED_KERNEL)
    void eventAndFenceFuturesBehindASpinningKernelCompleteOnlyAfterIt(TestReporter reporter) throws InterruptedException {
        long seed = Gpu.seed();
        Random random = Gpu.random(seed);
        int n = (1 << 20) + random.nextInt(1000);
        float a = 0.5f + random.nextFloat();
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = random.nextFloat() * 2 - 1;
        }
        String why = "n=" + n + " a=" + a + " seed=" + seed;
        int watches = 20; // more than the eight watch streams: the rest share them

        CudaContext ctx = Gpu.context();
        List<Event> extra = new ArrayList<>();
        try (Kernel spin = Gpu.kernel(Gpu.SPIN_THEN_FILL, "spin_then_fill"); Kernel scale = Gpu.kernel(SCALE, "scale");
                PinnedBuffer flag = ctx.allocatePinned(4); Stream s = ctx.createStream(); Event done = ctx.createEvent();
                DeviceBuffer busy = ctx.allocate(4096); DeviceBuffer dx = ctx.allocate(4L * n);
                DeviceBuffer dy = ctx.allocate(4L * n)) {
            dx.asFloats().copyFrom(x);
            s.fill(dy.asFloats(), Float.floatToRawIntBits(POISON));
            s.onComplete(INLINE).join(); // the dispatcher exists from here on

            flag.segment().set(ValueLayout.JAVA_INT, 0, 0);
            spin.launch(s, LaunchConfig.of(1, 32), KernelArg.address(flag.segment().address()), KernelArg.pointer(busy),
                    KernelArg.f32(1f), KernelArg.i64(1024));
            scale.launch(s, LaunchConfig.covering(n, 256), KernelArg.pointer(dy), KernelArg.pointer(dx), KernelArg.f32(a),
                    KernelArg.i32(n));
            done.record(s);
            Fence fence = s.recordFence();
            // Each dependent runs on the dispatcher (INLINE), never on the driver's thread, so it may query the event.
            AtomicInteger early = new AtomicInteger();
            List<CompletableFuture<Void>> futures = new ArrayList<>();
            futures.add(done.onComplete(INLINE).thenRun(() -> countIfEarly(done, early)));
            futures.add(fence.onComplete(INLINE).thenRun(() -> countIfEarly(done, early)));
            for (int i = 0; i < watches; i++) {
                Event e = ctx.createEvent();
                extra.add(e);
                e.record(s);
                futures.add(e.onComplete(INLINE).thenRun(() -> countIfEarly(done, early)));
            }
            int watchStreams = ctx.diagnostics().watchStreams();
            // Not a timing assertion: the kernel spins until the flag is set (or about a minute),
            // so no future may complete in this pause whatever its length; it gives an early one time to show.
            Thread.sleep(200);
            boolean noneDoneWhileSpinning = futures.stream().noneMatch(CompletableFuture::isDone);
            boolean fenceWaitedOn = !fence.isConsumed();
            flag.segment().set(ValueLayout.JAVA_INT, 0, 1);

            long waitStart = System.nanoTime();
            CompletableFuture.allOf(futures.toArray(CompletableFuture[]::new)).join();
            long waitNanos = System.nanoTime() - waitStart;
            reporter.publishEntry("event completions", futures.size() + " event and fence futures on " + watchStreams
                    + " watch streams, all complete " + waitNanos / 1000 + " us after the flag");

            assertTrue(noneDoneWhileSpinning, "an event or fence future completed while the kernel before it spun " + why);
            assertTrue(fenceWaitedOn, "asking for a fence's completion must not consume it");
            assertEquals(0, early.get(), "futures completed before the event they watch " + why);
            assertTrue(watchStreams <= 8, "watch streams: " + watchStreams);
            assertEquals(0, ctx.diagnostics().pendingCompletions());
            fence.close();

            float[] expected = new float[n];
            for (int i = 0; i < n; i++) {
                expected[i] = a * x[i];
            }
            float[] got = new float[n];
            Arrays.fill(got, POISON);
            dy.asFloats().copyTo(got);
            assertArrayEquals(expected, got, why);
        } finally {
            extra.forEach(Event::close);
        }
    }

    /** A dependent of a completion future, on the dispatcher: counts it when {@code done} has not completed. */
    private static void countIfEarly(Event done, AtomicInteger early) {
        if (!done.query()) {
            early.incrementAndGet();
        }
    }

    @Test
    void theFirstCompletionAddsAtMostTheDispatcherAndTheDriversCallbackThread() {
        CudaContext ctx = Gpu.context();
        int before = liveThreads();
        try (Stream s = ctx.createStream()) {
            s.onComplete(INLINE).join();
        }
        int after = liveThreads();
        // The dispatcher (once per JVM), and the driver's host-function thread, which the JVM
        // attaches when the upcall first runs on it; either may exist already from earlier tests.
        assertTrue(after - before <= 2, "threads " + before + " -> " + after);
    }

    /** The JVM's live platform threads, attached native threads included. */
    private static int liveThreads() {
        return Thread.getAllStackTraces().size();
    }
}
