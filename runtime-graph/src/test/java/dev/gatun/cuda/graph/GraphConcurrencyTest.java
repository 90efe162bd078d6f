package dev.gatun.cuda.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;

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
 * barrier and then check exact counts and the fake driver's record of misuse; nothing depends on
 * timing.
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

    private static void capture(FakeGraphBackend backend, GraphSlot<String> slot, String stream, int topology,
            int label) {
        slot.beginCapture(stream, CaptureMode.THREAD_LOCAL);
        backend.nextCapture(topology, label);
        slot.endCapture();
    }

    @Test
    void replaysRunWhileOtherSlotsCaptureAndReset() throws Exception {
        FakeGraphBackend backend = new FakeGraphBackend();
        CollectingRetirement retirement = new CollectingRetirement();
        GraphLifecycles<String> graphs = new GraphLifecycles<>(backend, retirement);
        GraphSlot<String> hot = graphs.registerOwner("serving").slot("decode");
        GraphSlot<String> busy = graphs.registerOwner("warming").slot("prefill");
        capture(backend, hot, "hot", 1, 1);
        capture(backend, hot, "hot", 2, 2);
        int replays = 2_000;
        int cycles = 300;

        List<Callable<Integer>> tasks = new ArrayList<>();
        for (int t = 0; t < REPLAY_THREADS; t++) {
            String stream = "replay-" + t;
            tasks.add(() -> {
                for (int i = 0; i < replays; i++) {
                    hot.replay(stream);
                }
                return replays;
            });
        }
        tasks.add(() -> {
            for (int i = 0; i < cycles; i++) {
                capture(backend, busy, "busy", 1, 100);
                busy.replay("busy");
                busy.reset();
            }
            return cycles;
        });
        race(tasks);

        GraphCounts hotCounts = hot.counts();
        assertEquals(REPLAY_THREADS * replays, hotCounts.replays());
        assertEquals(2L * REPLAY_THREADS * replays, hotCounts.segmentLaunches());
        assertEquals(new GraphCounts(cycles, cycles, cycles, 0, 0, 0, cycles), busy.counts());
        List<Integer> launched = backend.takeLaunches();
        assertEquals(REPLAY_THREADS * replays, launched.stream().filter(label -> label == 1).count());
        assertEquals(REPLAY_THREADS * replays, launched.stream().filter(label -> label == 2).count());
        assertEquals(cycles, launched.stream().filter(label -> label == 100).count());
        assertEquals(List.of(), backend.violations());
    }

    /**
     * Retirement here frees a handed-over executable at once, so a replay that launched an
     * executable after its hand-over would show up as a launch of a freed handle.
     */
    @Test
    void aReplayRacingAResetOrReinstantiationOfItsSlotNeverLaunchesARetiredExecutable() throws Exception {
        FakeGraphBackend backend = new FakeGraphBackend();
        CollectingRetirement retirement = new CollectingRetirement(true);
        GraphSlot<String> slot = new GraphLifecycles<>(backend, retirement).registerOwner("serving").slot("decode");
        backend.beforeEachLaunch(Thread::yield);
        int attempts = 50_000;
        int cycles = 5_000;

        List<Callable<int[]>> tasks = new ArrayList<>();
        for (int t = 0; t < REPLAY_THREADS; t++) {
            String stream = "replay-" + t;
            tasks.add(() -> {
                int launched = 0;
                int refused = 0;
                for (int i = 0; i < attempts; i++) {
                    try {
                        slot.replay(stream);
                        launched++;
                    } catch (GraphStateException expected) {
                        // Nothing captured at this instant, or a re-capture in progress.
                        refused++;
                    }
                }
                return new int[] {launched, refused};
            });
        }
        tasks.add(() -> {
            for (int i = 0; i < cycles; i++) {
                capture(backend, slot, "capture", 1, 10);
                slot.beginRecapture(0, "capture", CaptureMode.THREAD_LOCAL);
                backend.nextCapture(2 + i % 2, 11);
                slot.endCapture();
                slot.reset();
            }
            return new int[] {cycles, 0};
        });
        List<int[]> results = race(tasks);

        assertEquals(List.of(), backend.violations());
        int launched = 0;
        for (int t = 0; t < REPLAY_THREADS; t++) {
            assertEquals(attempts, results.get(t)[0] + results.get(t)[1]);
            launched += results.get(t)[0];
        }
        assertEquals(launched, slot.counts().replays());
        assertEquals(cycles, slot.counts().reinstantiations());
        assertEquals(2 * cycles, retirement.received());
        assertEquals(0, backend.liveExecs());
        assertEquals(0, backend.liveGraphs());
        assertEquals(launched, slot.counts().segmentLaunches());
    }
}
