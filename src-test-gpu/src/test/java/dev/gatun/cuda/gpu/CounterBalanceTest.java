package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.ContextCounters;
import dev.gatun.cuda.DevicePoolCounters;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CounterBalanceTest {

    private static ContextCounters counters(long syncAllocations, long asyncAllocations, long syncFrees, long asyncFrees,
            long liveBytes, long retainedBytes, long pending, long failed, long abandoned) {
        return new ContextCounters(syncAllocations, asyncAllocations, syncFrees, asyncFrees, liveBytes, retainedBytes,
                0, 0, 0, 0, 0, 0, 0, pending, 0, failed, abandoned);
    }

    private static DevicePoolCounters pool(long retainedBytes, long retainedBlocks, long allocations, long frees) {
        return new DevicePoolCounters(0, 0, retainedBytes, retainedBlocks, allocations, frees, 0);
    }

    private static final Map<String, Long> FIGURES = Map.of("live owners DEVICE_BUFFER", 3L);
    private static final CounterBalance.Snapshot BEFORE = new CounterBalance.Snapshot(
            counters(10, 4, 6, 4, 4096, 2048, 0, 0, 0), pool(2048, 2, 10, 6), FIGURES);

    private static List<String> violations(ContextCounters after, DevicePoolCounters poolAfter, long streamOrdered) {
        return CounterBalance.violations(BEFORE, new CounterBalance.Snapshot(after, poolAfter, FIGURES), streamOrdered);
    }

    @Test
    void aRunWhoseAllocationsWereFreedOrRetainedBalances() {
        // 5 more driver allocations, 3 freed, 2 kept by the pool (1024 bytes); 7 stream-ordered, all freed.
        ContextCounters after = counters(15, 11, 9, 11, 4096, 2048 + 1024, 0, 0, 0);
        assertEquals(List.of(), violations(after, pool(2048 + 1024, 4, 15, 9), 7));
    }

    @Test
    void aLeakedDriverAllocationIsNamed() {
        ContextCounters after = counters(15, 4, 8, 4, 4096 + 512, 2048 + 1024, 0, 0, 0);
        List<String> wrong = violations(after, pool(2048 + 1024, 4, 15, 8), 0);
        assertEquals(3, wrong.size(), wrong.toString());
        assertTrue(wrong.get(0).startsWith("5 driver allocations != 2 driver frees + 2 blocks"), wrong.get(0));
        assertTrue(wrong.get(2).startsWith("device bytes live changed by 512 (the pool retains 1024 bytes more"),
                wrong.get(2));
    }

    @Test
    void retainedBytesCountedAsLiveAreNamed() {
        // Issue 34: the pool's retained blocks must not stay in liveBytes once their owners are closed.
        ContextCounters after = counters(15, 4, 9, 4, 4096 + 1024, 2048 + 1024, 0, 0, 0);
        assertEquals(List.of("device bytes live changed by 1024 (the pool retains 1024 bytes more, which are not live)"),
                violations(after, pool(2048 + 1024, 4, 15, 9), 0));
    }

    @Test
    void aContextAndPoolThatDisagreeOnTheRetainedBytesAreNamed() {
        ContextCounters after = counters(10, 4, 6, 4, 4096, 2048, 0, 0, 0);
        assertEquals(List.of("the context's count of the pool's retained bytes changed by 0, the pool's own by 512"),
                violations(after, pool(2048 + 512, 2, 10, 6), 0));
    }

    @Test
    void anUnfreedOrUncountedStreamOrderedAllocationIsNamed() {
        ContextCounters after = counters(10, 7, 6, 6, 4096, 2048, 0, 0, 0);
        List<String> wrong = violations(after, pool(2048, 2, 10, 6), 2);
        assertEquals(List.of("the context counted 3 stream-ordered allocations, the run made 2",
                "3 stream-ordered allocations but 2 stream-ordered frees"), wrong);
    }

    @Test
    void pendingFailedAndAbandonedRetirementsAreNamed() {
        ContextCounters after = counters(10, 4, 6, 4, 4096, 2048, 3, 1, 2);
        assertEquals(List.of("3 retirements still pending after synchronize", "1 retirements failed",
                "2 retirements abandoned"), violations(after, pool(2048, 2, 10, 6), 0));
    }

    @Test
    void aFigureThatDidNotReturnIsNamed() {
        CounterBalance.Snapshot after = new CounterBalance.Snapshot(BEFORE.counters(), BEFORE.pool(),
                Map.of("live owners DEVICE_BUFFER", 4L));
        assertEquals(List.of("live owners DEVICE_BUFFER: 3 before the run, 4 after"),
                CounterBalance.violations(BEFORE, after, 0));
    }
}
