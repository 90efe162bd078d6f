package dev.gatun.cuda.internal.pool;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.DevicePoolCounters;
import dev.gatun.cuda.DevicePoolOptions;
import dev.gatun.cuda.testing.Background;
import dev.gatun.cuda.testing.Interposer;
import dev.gatun.cuda.testing.LogCapture;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.slf4j.event.Level;

class DevicePoolTest {

    private static final long MIB = 1L << 20;

    private final FakeBackend backend = new FakeBackend();

    private DevicePool pool(long bound) {
        return new DevicePool(backend, new DevicePoolOptions(bound, false));
    }

    private static DevicePoolCounters counters(long hits, long misses, long retainedBytes, long retainedBlocks,
            long allocations, long frees, long trims) {
        return new DevicePoolCounters(hits, misses, retainedBytes, retainedBlocks, allocations, frees, trims);
    }

    @Test
    void aReleasedBlockServesTheNextRequestOfItsClass() {
        DevicePool pool = pool(DevicePoolOptions.DEFAULT_MAX_RETAINED_BYTES);
        long a = pool.acquire(1000);
        assertEquals(1024, backend.sizeOf(a), "allocated at the class size");
        assertEquals(counters(0, 1, 0, 0, 1, 0, 0), pool.counters());

        assertEquals(0, pool.release(a, 1000));
        assertEquals(counters(0, 1, 1024, 1, 1, 0, 0), pool.counters());
        assertEquals(0, backend.freeCalls(), "a retained block is not freed");

        assertEquals(a, pool.acquire(700), "700 bytes share the 1024-byte class");
        assertEquals(counters(1, 1, 0, 0, 1, 0, 0), pool.counters());
        assertEquals(1, backend.allocateCalls());
    }

    @Test
    void aBlockIsNeverHandedToAnotherClass() {
        DevicePool pool = pool(DevicePoolOptions.DEFAULT_MAX_RETAINED_BYTES);
        long small = pool.acquire(1024);
        pool.release(small, 1024);
        long larger = pool.acquire(1025);
        assertNotEquals(small, larger);
        assertEquals(2048, backend.sizeOf(larger));
        assertEquals(counters(0, 2, 1024, 1, 2, 0, 0), pool.counters());
    }

    @Test
    void zeroBytesNeedNoBlock() {
        DevicePool pool = pool(DevicePoolOptions.DEFAULT_MAX_RETAINED_BYTES);
        assertEquals(0, pool.acquire(0));
        assertEquals(0, pool.release(0, 0));
        assertEquals(counters(0, 0, 0, 0, 0, 0, 0), pool.counters());
        assertEquals(0, backend.allocateCalls() + backend.freeCalls());
    }

    @Test
    void impossibleArgumentsAreRejectedBeforeTheBackend() {
        DevicePool pool = pool(DevicePoolOptions.DEFAULT_MAX_RETAINED_BYTES);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> pool.acquire(-1));
        assertTrue(e.getMessage().contains("-1"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> pool.release(0x1000, -1));
        assertThrows(IllegalArgumentException.class, () -> pool.release(0x1000, 0));
        assertThrows(IllegalArgumentException.class, () -> pool.release(0, 512));
        assertEquals(0, backend.allocateCalls() + backend.freeCalls());
        assertEquals(counters(0, 0, 0, 0, 0, 0, 0), pool.counters());
    }

    @Test
    void requestsAboveTheLargestClassBypassThePool() {
        DevicePool pool = pool(Long.MAX_VALUE);
        long bytes = SizeClasses.LARGEST + 1;
        long a = pool.acquire(bytes);
        assertEquals(bytes, backend.sizeOf(a), "allocated at its exact size");
        assertEquals(0, pool.release(a, bytes));
        assertEquals(-1, backend.sizeOf(a), "freed at once");
        assertEquals(counters(0, 1, 0, 0, 1, 1, 0), pool.counters());
    }

    @Test
    void requestsWhoseClassExceedsTheBoundBypassThePool() {
        DevicePool pool = pool(3000);
        long a = pool.acquire(2049); // its class, 4096, could never be retained under 3000
        assertEquals(2049, backend.sizeOf(a));
        pool.release(a, 2049);
        assertEquals(-1, backend.sizeOf(a));

        long b = pool.acquire(2048);
        pool.release(b, 2048);
        assertEquals(counters(0, 2, 2048, 1, 2, 1, 0), pool.counters());
    }

    @Test
    void releasesPastTheBoundAreFreed() {
        DevicePool pool = pool(4096);
        long[] blocks = new long[5];
        for (int i = 0; i < blocks.length; i++) {
            blocks[i] = pool.acquire(1024);
        }
        for (long b : blocks) {
            assertEquals(0, pool.release(b, 1024));
        }
        assertEquals(counters(0, 5, 4096, 4, 5, 1, 0), pool.counters());
        assertEquals(-1, backend.sizeOf(blocks[4]), "the fifth did not fit and was freed");
    }

    @Test
    void aBoundOfZeroDisablesPooling() {
        DevicePool pool = pool(0);
        for (int i = 0; i < 3; i++) {
            long a = pool.acquire(1000);
            assertEquals(1000, backend.sizeOf(a), "no rounding when nothing is pooled");
            assertEquals(0, pool.release(a, 1000));
            assertEquals(-1, backend.sizeOf(a));
        }
        assertEquals(counters(0, 3, 0, 0, 3, 3, 0), pool.counters());
    }

    @Test
    void outOfMemoryReachesTheCallerAtOnceWithTheFreeListsKept() {
        // Trimming and retrying is the context's out-of-memory ladder's (OutOfMemoryLadderTest):
        // the pool itself makes exactly one driver call per miss.
        FakeBackend device = new FakeBackend(4 * MIB);
        DevicePool pool = new DevicePool(device, new DevicePoolOptions(DevicePoolOptions.DEFAULT_MAX_RETAINED_BYTES, false));
        long a = pool.acquire(2 * MIB);
        long b = pool.acquire(2 * MIB);
        pool.release(a, 2 * MIB);
        pool.release(b, 2 * MIB);

        CudaException e = assertThrows(CudaException.class, () -> pool.acquire(3 * MIB)); // full of retained blocks
        assertEquals(FakeBackend.OUT_OF_MEMORY, e.result());
        assertEquals(3, device.allocateCalls(), "two allocations, then one failure, no retry");
        assertEquals(counters(0, 3, 4 * MIB, 2, 2, 0, 0), pool.counters(), "nothing trimmed");
        assertEquals(0, pool.trim(), "what the ladder's trim does");
        assertEquals(3 * MIB, device.sizeOf(pool.acquire(3 * MIB)));
        assertEquals(List.of(), device.misuse());
    }

    @Test
    void aMissOverTheHardCapIsRefusedAsOutOfMemoryBeforeTheDriverIsAsked() {
        DevicePool pool = new DevicePool(backend, new DevicePoolOptions(DevicePoolOptions.DEFAULT_MAX_RETAINED_BYTES, false)
                .withHardCapBytes(3 * MIB));
        long a = pool.acquire(2 * MIB);
        CudaException e = assertThrows(CudaException.class, () -> pool.acquire(2 * MIB));
        assertEquals(FakeBackend.OUT_OF_MEMORY, e.result(), "the ladder climbs a cap refusal like any out-of-memory");
        assertTrue(e.getMessage().contains("hard cap"), e.getMessage());
        assertEquals(1, backend.allocateCalls(), "refused before the driver");
        assertEquals(1, pool.counters().capRefusals());

        pool.release(a, 2 * MIB); // retained: still held from the driver, so still counted against the cap
        long b = pool.acquire(MIB); // a miss of another class: 2 + 1 MiB, at the cap
        assertThrows(CudaException.class, () -> pool.acquire(MIB), "past the cap, retained bytes included");
        assertEquals(a, pool.acquire(2 * MIB), "a hit takes nothing more from the driver: never refused");
        assertEquals(2, pool.counters().capRefusals());
        assertEquals(3 * MIB, pool.footprint());
        pool.release(a, 2 * MIB);
        pool.release(b, MIB);
        pool.trim();
        assertEquals(0, pool.footprint());
        assertEquals(2 * MIB, backend.sizeOf(pool.acquire(2 * MIB)), "after a trim, room again");
    }

    @Test
    void anIdlePoolAboveItsSoftLimitFreesRetainedBlocksLargestFirstDownToIt() {
        DevicePool pool = new DevicePool(backend, new DevicePoolOptions(DevicePoolOptions.DEFAULT_MAX_RETAINED_BYTES, false)
                .withSoftLimitBytes(3 * MIB));
        long a = pool.acquire(2 * MIB);
        long b = pool.acquire(MIB);
        long c = pool.acquire(MIB);
        long d = pool.acquire(512 * 1024);
        pool.release(a, 2 * MIB);
        assertEquals(4 * MIB + 512 * 1024, pool.footprint(), "the first check is never idle");
        pool.release(b, MIB); // no acquisition since the previous check: idle, 4.5 MiB > 3 MiB
        assertEquals(2 * MIB + 512 * 1024, pool.footprint(), "the retained 2 MiB block freed, largest first");
        assertEquals(1, backend.freeCalls());
        assertEquals(1, pool.counters().softLimitTrims());
        assertEquals(MIB, pool.counters().retainedBytes(), "1 MiB kept for reuse under the limit");
        pool.release(c, MIB);
        pool.release(d, 512 * 1024);
        assertEquals(0, pool.trimIfIdle(), "under the limit: nothing more");
        assertEquals(1, backend.freeCalls());
        assertEquals(2 * MIB + 512 * 1024, pool.counters().retainedBytes());
    }

    @Test
    void aBusyPoolAboveItsSoftLimitKeepsItsBlocks() {
        DevicePool pool = new DevicePool(backend, new DevicePoolOptions(DevicePoolOptions.DEFAULT_MAX_RETAINED_BYTES, false)
                .withSoftLimitBytes(MIB));
        long a = pool.acquire(2 * MIB);
        for (int i = 0; i < 5; i++) {
            long b = pool.acquire(MIB);
            pool.release(b, MIB); // an acquisition between every two checks: never idle
        }
        assertEquals(3 * MIB, pool.footprint());
        assertEquals(0, pool.counters().softLimitTrims());
        assertEquals(0, backend.freeCalls());
        pool.release(a, 2 * MIB);
    }

    @Test
    void otherAllocationErrorsAreNotRetried() {
        DevicePool pool = pool(DevicePoolOptions.DEFAULT_MAX_RETAINED_BYTES);
        long kept = pool.acquire(512);
        pool.release(kept, 512);
        backend.failNextAllocations(1, FakeBackend.INVALID_VALUE);
        CudaException e = assertThrows(CudaException.class, () -> pool.acquire(1024));
        assertEquals(FakeBackend.INVALID_VALUE, e.result());
        assertEquals(2, backend.allocateCalls());
        assertEquals(counters(0, 2, 512, 1, 1, 0, 0), pool.counters(), "no trim");
    }

    @Test
    void aReleaseTheDriverRefusesLeavesTheBlockWithTheCaller() {
        DevicePool pool = pool(0);
        long a = pool.acquire(4096);
        backend.freeResult(999);
        assertEquals(999, pool.release(a, 4096));
        assertEquals(4096, backend.sizeOf(a), "still allocated, for retirement to retry");
        backend.freeResult(0);
        assertEquals(0, pool.release(a, 4096));
        assertEquals(-1, backend.sizeOf(a));
        assertEquals(counters(0, 1, 0, 0, 1, 1, 0), pool.counters());
    }

    @Test
    void trimFreesEverythingRetained() {
        DevicePool pool = pool(DevicePoolOptions.DEFAULT_MAX_RETAINED_BYTES);
        long[] sizes = {1, 600, 5000, MIB + 1, 3 * MIB};
        long[] blocks = new long[sizes.length];
        for (int i = 0; i < sizes.length; i++) {
            blocks[i] = pool.acquire(sizes[i]);
        }
        for (int i = 0; i < sizes.length; i++) {
            pool.release(blocks[i], sizes[i]);
        }
        assertEquals(5, pool.counters().retainedBlocks());
        assertEquals(0, pool.trim());
        assertEquals(counters(0, 5, 0, 0, 5, 5, 1), pool.counters());
        assertEquals(0, backend.liveBlocks());
        assertEquals(List.of(), backend.misuse(), "each freed with the size it was allocated with");
    }

    @Test
    void aBlockTheDriverWillNotFreeOnTrimIsNeverHandedOutAgain() {
        DevicePool pool = pool(DevicePoolOptions.DEFAULT_MAX_RETAINED_BYTES);
        long a = pool.acquire(512);
        pool.release(a, 512);
        backend.freeResult(999);
        LogCapture.clear();
        assertEquals(999, pool.trim());
        LogCapture.expect(Level.ERROR, DevicePool.class, "Leaking a pooled device block of 512 bytes at 0x"
                + Long.toHexString(a) + ": the driver refused to free it with CUresult 999");
        backend.freeResult(0);
        assertNotEquals(a, pool.acquire(512));
        assertEquals(counters(0, 2, 0, 0, 2, 0, 1), pool.counters());
    }

    @Test
    void aFreeThatThrowsDuringTrimLeavesTheBlockPooled() {
        DevicePool pool = pool(DevicePoolOptions.DEFAULT_MAX_RETAINED_BYTES);
        long a = pool.acquire(512);
        pool.release(a, 512);
        IllegalStateException gateClosed = new IllegalStateException("gate closed");
        backend.freeThrows(gateClosed);
        assertSame(gateClosed, assertThrows(IllegalStateException.class, pool::trim));
        assertEquals(counters(0, 1, 512, 1, 1, 0, 1), pool.counters());
        backend.freeThrows(null);
        assertEquals(a, pool.acquire(512), "still pooled, still allocated");
        assertEquals(512, backend.sizeOf(a));
    }

    @Test
    void aBackendThatReturnsTheNullAddressIsReported() {
        DevicePool pool = new DevicePool(new PoolBackend() {
            @Override
            public long allocate(long bytes) {
                return 0;
            }

            @Override
            public int free(long address, long bytes) {
                throw new AssertionError("nothing to free");
            }
        }, new DevicePoolOptions(DevicePoolOptions.DEFAULT_MAX_RETAINED_BYTES, false));
        assertThrows(IllegalStateException.class, () -> pool.acquire(512));
    }

    /**
     * With the pool off a miss is counted once, as it ends (allocations + failed misses), not as
     * it begins: a snapshot taken while a miss is held inside the backend's allocation shows it in
     * neither count, and never more allocations than misses, nor more frees than allocations.
     */
    @Test
    void aSnapshotRacingAMissCountsItOnceItEndedAsAnAllocationOrAFailedMiss() throws Exception {
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch letGo = new CountDownLatch(1);
        DevicePool pool = new DevicePool(new PoolBackend() {
            private int calls;

            @Override
            public long allocate(long bytes) {
                if (++calls == 2) { // the first is the warm-up's; only the miss thread makes the second
                    inside.countDown();
                    await(letGo);
                }
                return backend.allocate(bytes);
            }

            @Override
            public int free(long address, long bytes) {
                return backend.free(address, bytes);
            }
        }, new DevicePoolOptions(0, false));
        long warm = pool.acquire(MIB);
        assertEquals(0, pool.release(warm, MIB));
        Background<Long> miss = Background.call("miss", () -> pool.acquire(MIB));
        await(inside);
        DevicePoolCounters during = pool.counters();
        assertFalse(miss.finished(), "the miss was still inside the backend's allocation");
        assertEquals(counters(0, 1, 0, 0, 1, 1, 0), during, "the miss in progress is counted nowhere yet");
        letGo.countDown();
        long address = miss.join();
        assertEquals(counters(0, 2, 0, 0, 2, 1, 0), pool.counters());
        backend.failNextAllocations(1, FakeBackend.OUT_OF_MEMORY);
        assertThrows(CudaException.class, () -> pool.acquire(MIB));
        assertEquals(counters(0, 3, 0, 0, 2, 1, 0), pool.counters(), "a failed miss is a miss, not an allocation");
        assertEquals(0, pool.release(address, MIB));
        assertEquals(counters(0, 3, 0, 0, 2, 2, 0), pool.counters());
    }

    /** Threads allocating and freeing with the pool off while another reads the counters: every snapshot is ordered. */
    @Test
    void everySnapshotRacingMissesAndFreesIsOrdered() throws Exception {
        DevicePool pool = pool(0);
        AtomicBoolean stop = new AtomicBoolean();
        // The workers start after the reader's first snapshot, so the reader races them even when
        // the scheduler would run the workers to the end first (two busy cores).
        CountDownLatch readerStarted = new CountDownLatch(1);
        List<Background<Void>> workers = new ArrayList<>();
        for (int t = 0; t < 2; t++) {
            workers.add(Background.run("worker-" + t, () -> {
                await(readerStarted);
                for (int i = 0; i < 20_000; i++) {
                    assertEquals(0, pool.release(pool.acquire(4096), 4096));
                }
            }));
        }
        Background<Integer> reader = Background.call("reader", () -> {
            int snapshots = 0;
            do {
                DevicePoolCounters c = pool.counters();
                assertTrue(c.frees() <= c.allocations() && c.allocations() <= c.misses(), c.toString());
                snapshots++;
                readerStarted.countDown();
            } while (!stop.get());
            return snapshots;
        });
        for (Background<Void> w : workers) {
            w.join();
        }
        stop.set(true);
        reader.join(); // rethrows what the reader saw broken (its first snapshot precedes the workers, so it took one)
        assertEquals(counters(0, 40_000, 0, 0, 40_000, 40_000, 0), pool.counters());
    }

    private static void await(CountDownLatch latch) {
        try {
            assertTrue(latch.await(Interposer.GUARD.toMillis(), TimeUnit.MILLISECONDS), "a deadlock guard ran out");
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }
}
