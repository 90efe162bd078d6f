package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CaptureArena;
import dev.gatun.cuda.ContextCounters;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DevicePoolCounters;
import dev.gatun.cuda.ModuleImage;
import dev.gatun.cuda.graph.CudaGraphs;
import dev.gatun.cuda.gpu.load.OperationMix;
import dev.gatun.cuda.gpu.load.Watchdog;
import dev.gatun.cuda.junit.RequiresGpu;
import dev.gatun.cuda.nvrtc.CompileOptions;
import dev.gatun.cuda.nvrtc.CompileTarget;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;

/**
 * Eight threads drive one context with a seeded random mix of everything Gatun does (see
 * {@link StressOperation}), each result checked against the CPU; at the end nothing may have
 * leaked, hung or stayed unretired, every counter that must return is back at its value before
 * the run, and the allocation counters add up ({@link CounterBalance}).
 *
 * <p>Tagged "stress": the bundle's plain {@code ./run} leaves it out, {@code ./stress} runs it
 * (about a minute), {@code ./stress --sanitize} runs a shorter one under compute-sanitizer
 * memcheck. System property {@value #SECONDS_PROPERTY} sets the duration (default 60), and
 * {@value #SEED_PROPERTY} replays a run's seed.
 */
@RequiresGpu
@Tag(GpuTags.STRESS)
class StressGpuTest {

    static final String SECONDS_PROPERTY = "gatun.stress.seconds";
    static final String SEED_PROPERTY = "gatun.stress.seed";
    private static final int WORKERS = 8;
    /** Past the run's duration, how long the workers may take to finish their last operation. */
    private static final Duration GRACE = Duration.ofMinutes(2);

    @Test
    void eightThreadsOfMixedWorkMatchTheCpuAndLeaveNothingBehind(TestReporter report) throws Exception {
        CudaContext ctx = Gpu.context();
        double seconds = Double.parseDouble(System.getProperty(SECONDS_PROPERTY, "60"));
        long seed = Long.getLong(SEED_PROPERTY, Gpu.seed());
        ctx.synchronize();
        CounterBalance.Snapshot before = CounterBalance.Snapshot.of(ctx);

        CompileTarget cubin = CompileTarget.cubin(ctx.device().capabilities());
        ModuleImage[] versions = new ModuleImage[2];
        for (int v = 0; v < versions.length; v++) {
            versions[v] = NvrtcLibrary.system().compiler().compile(StressKernels.VERSION, CompileOptions.builder(cubin)
                    .programName("version.cu").options("-DVERSION=" + (v + 1)).build()).moduleImage();
        }
        NvrtcLibrary.system().compiler().load(ctx.modules(), "stress-gather", StressKernels.GATHER,
                CompileOptions.builder(CompileTarget.ptx(ctx.device().capabilities()))
                        .includeDirectory(CudaGraphs.latchIncludeDirectory()).build(), "gather");
        CudaGraphs graphs = CudaGraphs.create(ctx);
        CaptureArena arena = CaptureArena.reserve(ctx, 64L << 20);
        arena.ensure(4L * StressWorker.GRAPH_ELEMENTS); // one chunk: every worker's graph takes the same first bytes
        StressShared shared = new StressShared(ctx, Gpu.kernel(StressKernels.AFFINE, "affine"),
                ctx.modules().kernel("stress-gather", "gather"), versions, graphs, arena);
        ctx.modules().unload("stress-gather"); // the kernel keeps its module alive

        long start = System.nanoTime();
        long deadline = start + (long) (seconds * 1e9);
        AtomicInteger threadNumber = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(WORKERS, r -> {
            // Daemon threads: a worker hung in the driver must not keep the JVM alive after the watchdog fails the test.
            Thread t = new Thread(r, "stress-worker-" + threadNumber.getAndIncrement());
            t.setDaemon(true);
            return t;
        });
        List<Future<?>> workers = new ArrayList<>();
        Throwable failure = null;
        try {
            for (int w = 0; w < WORKERS; w++) {
                StressWorker worker = new StressWorker(shared, w, new OperationMix<>(StressOperation.class,
                        StressOperation.WEIGHTS, seed + w));
                workers.add(pool.submit(() -> worker.runUntil(deadline)));
            }
            Watchdog.await(workers, Duration.ofNanos((long) (seconds * 1e9)).plus(GRACE));
        } catch (Throwable t) {
            failure = t;
            throw t;
        } finally {
            // When one worker failed, the others may still be inside an operation (a capture, say):
            // they must stop before the graphs and shared owners close under them, and what closing
            // reports must not hide the failure that stopped the run.
            pool.shutdownNow();
            boolean stopped = pool.awaitTermination(GRACE.toSeconds(), TimeUnit.SECONDS);
            closeKeeping(failure, shared, graphs);
            if (failure == null) {
                assertTrue(stopped, "the workers stopped within " + GRACE + " of being interrupted");
            }
        }
        double elapsed = (System.nanoTime() - start) / 1e9;

        ctx.synchronize();
        ctx.reap();
        CounterBalance.Snapshot balance = CounterBalance.Snapshot.of(ctx);
        ContextCounters after = balance.counters();
        DevicePoolCounters poolAfter = balance.pool();
        EnumMap<StressOperation, Long> counts = shared.counts();
        long total = counts.values().stream().mapToLong(Long::longValue).sum();
        report.publishEntry("stress", String.format(Locale.ROOT, "seed %d, %d threads, %.1f s, %,d operations (%.0f/s), "
                + "%d mismatches", seed, WORKERS, elapsed, total, total / elapsed, shared.mismatches()));
        report.publishEntry("operations", counts.toString());
        report.publishEntry("counters", String.format(Locale.ROOT, "sync allocations %+d, sync frees %+d, "
                + "stream-ordered allocations %+d and frees %+d, pool hits %+d, misses %+d, retirements completed %+d, "
                + "bytes live %+d, pool retained bytes %+d", after.syncAllocations() - before.counters().syncAllocations(),
                after.syncFrees() - before.counters().syncFrees(),
                after.asyncAllocations() - before.counters().asyncAllocations(),
                after.asyncFrees() - before.counters().asyncFrees(), poolAfter.hits() - before.pool().hits(),
                poolAfter.misses() - before.pool().misses(),
                after.completedRetirements() - before.counters().completedRetirements(),
                after.liveBytes() - before.counters().liveBytes(),
                after.devicePoolRetainedBytes() - before.counters().devicePoolRetainedBytes()));

        assertEquals(0, shared.mismatches(), () -> "results that differ from the CPU (seed " + seed + "; replay with -D"
                + SEED_PROPERTY + "=" + seed + "):\n" + String.join("\n", shared.firstMismatches()));
        for (StressOperation op : StressOperation.values()) {
            assertTrue(counts.get(op) > 0, () -> op + " never ran in " + total + " operations (seed " + seed + ")");
        }
        List<String> unbalanced = CounterBalance.violations(before, balance, shared.streamOrderedAllocations());
        assertTrue(unbalanced.isEmpty(), () -> "the counters are not back at their baseline or do not add up (seed "
                + seed + "):\n" + String.join("\n", unbalanced));
    }

    /**
     * Closes every owner in order; a close that throws does not stop the later ones. With a
     * {@code failure} already under way, their exceptions are added to it as suppressed;
     * otherwise the first is thrown, carrying the rest.
     */
    private static void closeKeeping(Throwable failure, AutoCloseable... owners) throws Exception {
        Exception first = null;
        for (AutoCloseable owner : owners) {
            try {
                owner.close();
            } catch (Exception e) {
                if (failure != null) {
                    failure.addSuppressed(e);
                } else if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        if (first != null) {
            throw first;
        }
    }
}
