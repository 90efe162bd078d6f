package dev.gatun.cuda.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.OwnerKind;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * Replays are lock-free, so they race with mutations. These tests start every thread at one
 * barrier and then check exact counts and the simulated driver's record of misuse; nothing
 * depends on timing.
 */
class GraphConcurrencyTest {

    private static final int REPLAY_THREADS = 3;

    /** Runs every task, released together, and returns their results (rethrowing any failure). */
    private static <T> List<T> race(List<Callable<T>> tasks) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(tasks.size());
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<T>> futures = new ArrayList<>();
            for (Callable<T> task : tasks) {
                futures.add(pool.submit(() -> {
                    start.await();
                    return task.call();
                }));
            }
            start.countDown();
            List<T> results = new ArrayList<>();
            for (Future<T> future : futures) {
                results.add(future.get());
            }
            return results;
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void replaysRunWhileOtherSlotsCaptureAndReset() throws Exception {
        try (SimulatedGraphs gpu = new SimulatedGraphs()) {
            GraphLifecycles graphs = new GraphLifecycles();
            GraphSlot hot = graphs.registerGroup("serving").slot("decode");
            GraphSlot busy = graphs.registerGroup("warming").slot("prefill");
            gpu.capture(hot, "hot", 1, 1);
            gpu.capture(hot, "hot", 2, 2);
            int replays = 2_000;
            int cycles = 300;

            List<Callable<Integer>> tasks = new ArrayList<>();
            for (int t = 0; t < REPLAY_THREADS; t++) {
                var stream = gpu.stream("replay-" + t);
                tasks.add(() -> {
                    for (int i = 0; i < replays; i++) {
                        hot.replay(stream);
                    }
                    return replays;
                });
            }
            tasks.add(() -> {
                for (int i = 0; i < cycles; i++) {
                    gpu.capture(busy, "busy", 1, 100);
                    busy.replay(gpu.stream("busy"));
                    busy.reset();
                }
                return cycles;
            });
            race(tasks);

            GraphCounters hotCounts = hot.counters();
            assertEquals(REPLAY_THREADS * replays, hotCounts.replays());
            assertEquals(2L * REPLAY_THREADS * replays, hotCounts.segmentLaunches());
            assertEquals(new GraphCounters(cycles, cycles, cycles, 0, 0, 0, 0, cycles), busy.counters());
            List<Integer> launched = gpu.takeLaunches();
            assertEquals(REPLAY_THREADS * replays, launched.stream().filter(label -> label == 1).count());
            assertEquals(REPLAY_THREADS * replays, launched.stream().filter(label -> label == 2).count());
            assertEquals(cycles, launched.stream().filter(label -> label == 100).count());
            assertEquals(List.of(), gpu.violations());
            graphs.retireAll();
        }
    }

    /**
     * Every launch of the simulated GPU yields inside its driver call, to widen the window in
     * which a racing mutation could close what is being launched; a replay that launched a
     * closed executable would fail with the executable's "is closed" IllegalStateException, not
     * with the slot's refusal to replay.
     */
    @Test
    void aReplayRacingAResetOrReinstantiationOfItsSlotNeverLaunchesARetiredExecutable() throws Exception {
        try (SimulatedGraphs gpu = new SimulatedGraphs()) {
            GraphSlot slot = new GraphLifecycles().registerGroup("serving").slot("decode");
            gpu.onEachRun(Thread::yield);
            int attempts = 50_000;
            int cycles = 5_000;
            long retiredBefore = gpu.ctx.diagnostics().counters().completedRetirements();

            List<Callable<int[]>> tasks = new ArrayList<>();
            for (int t = 0; t < REPLAY_THREADS; t++) {
                var stream = gpu.stream("replay-" + t);
                tasks.add(() -> {
                    int launched = 0;
                    int refused = 0;
                    for (int i = 0; i < attempts; i++) {
                        try {
                            slot.replay(stream);
                            launched++;
                        } catch (IllegalStateException refusal) {
                            // Nothing captured at this instant, or a re-capture in progress; any
                            // other misuse (a closed executable launched) fails the test.
                            if (!refusal.getMessage().startsWith("group 'serving' slot 'decode': cannot replay")) {
                                throw refusal;
                            }
                            refused++;
                        }
                    }
                    return new int[] {launched, refused};
                });
            }
            tasks.add(() -> {
                for (int i = 0; i < cycles; i++) {
                    gpu.capture(slot, "capture", 1, 10);
                    slot.beginRecapture(0, gpu.stream("capture"), CaptureMode.THREAD_LOCAL);
                    gpu.endCapture(slot, "capture", 2 + i % 2, 11);
                    slot.reset();
                }
                return new int[] {cycles, 0};
            });
            List<int[]> results = race(tasks);

            assertEquals(List.of(), gpu.violations());
            int launched = 0;
            for (int t = 0; t < REPLAY_THREADS; t++) {
                assertEquals(attempts, results.get(t)[0] + results.get(t)[1]);
                launched += results.get(t)[0];
            }
            assertEquals(launched, slot.counters().replays());
            assertEquals(cycles, slot.counters().reinstantiations());
            assertEquals(0, gpu.ctx.diagnostics().liveOwners(OwnerKind.GRAPH_EXEC));
            gpu.ctx.reap();
            // Per cycle, two executables and the two graphs they were made from.
            assertEquals(4L * cycles, gpu.ctx.diagnostics().counters().completedRetirements() - retiredBefore);
            assertEquals(0, gpu.liveExecs());
            assertEquals(0, gpu.liveGraphs());
            assertEquals(launched, slot.counters().segmentLaunches());
        }
    }
}
