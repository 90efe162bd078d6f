package dev.gatun.cuda.internal.pool;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.DevicePoolCounters;
import dev.gatun.cuda.DevicePoolOptions;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Threads acquire, hold and release blocks of a few classes at once. Each block is claimed in a
 * shared map while held: a block handed to two holders at the same time fails the claim.
 */
class DevicePoolConcurrencyTest {

    private static final int THREADS = 4;
    private static final int ROUNDS = 20_000;
    /** Mostly one class (100 and 512 bytes share it), so threads contend on the same free list. */
    private static final long[] SIZES = {100, 512, 512, 5000, (1L << 20) + 1};

    @ParameterizedTest
    @ValueSource(longs = {0, 16 * 1024, DevicePoolOptions.DEFAULT_MAX_RETAINED_BYTES})
    void concurrentUseKeepsCountsConsistentAndNeverSharesABlock(long bound) throws Exception {
        FakeBackend device = new FakeBackend();
        DevicePool pool = new DevicePool(device, new DevicePoolOptions(bound, false));
        ConcurrentHashMap<Long, Integer> holders = new ConcurrentHashMap<>();
        AtomicInteger conflicts = new AtomicInteger();
        Queue<String> examples = new ConcurrentLinkedQueue<>();
        CountDownLatch start = new CountDownLatch(1);
        List<Callable<Long>> workers = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            int id = t;
            workers.add(() -> {
                SplittableRandom random = new SplittableRandom(id);
                long[] addresses = new long[3];
                long[] sizes = new long[3];
                long acquires = 0;
                start.await();
                for (int round = 0; round < ROUNDS; round++) {
                    int n = 1 + random.nextInt(addresses.length);
                    acquires += n;
                    for (int i = 0; i < n; i++) {
                        sizes[i] = SIZES[random.nextInt(SIZES.length)];
                        addresses[i] = pool.acquire(sizes[i]);
                        Integer other = holders.putIfAbsent(addresses[i], id);
                        if (other != null && conflicts.incrementAndGet() <= 5) {
                            examples.add("0x" + Long.toHexString(addresses[i]) + " held by " + other + " and " + id);
                        }
                    }
                    for (int i = 0; i < n; i++) {
                        holders.remove(addresses[i], id);
                        assertEquals(0, pool.release(addresses[i], sizes[i]), "release refused");
                    }
                }
                return acquires;
            });
        }
        long acquires = 0;
        try (ExecutorService executor = Executors.newFixedThreadPool(THREADS)) {
            List<Future<Long>> results = new ArrayList<>();
            for (Callable<Long> w : workers) {
                results.add(executor.submit(w));
            }
            start.countDown();
            for (Future<Long> r : results) {
                acquires += r.get(); // rethrows a worker's assertion failure
            }
        }

        assertEquals(0, conflicts.get(), () -> "blocks handed to two holders at once, e.g. " + examples);
        DevicePoolCounters c = pool.counters();
        assertEquals(acquires, c.hits() + c.misses());
        assertTrue(c.retainedBytes() <= bound);
        assertEquals(c.retainedBlocks(), device.liveBlocks(), "everything was released: live = retained");
        assertEquals(c.retainedBytes(), device.liveBytes());
        assertEquals(c.allocations() - c.frees(), device.liveBlocks());
        assertEquals(c.allocations(), device.allocateCalls());
        assertEquals(List.of(), device.misuse());
        if (bound > 0) {
            assertTrue(c.hits() > 0, "a warmed pool serves hits: " + c);
        }
        pool.trim();
        assertEquals(0, device.liveBlocks());
    }
}
