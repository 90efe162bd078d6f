package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.ContextCounters;
import dev.gatun.cuda.DevicePoolCounters;
import java.util.List;
import org.junit.jupiter.api.Test;

class CounterBalanceTest {

    private static ContextCounters counters(long syncAllocations, long asyncAllocations, long syncFrees, long asyncFrees,
            long bytesLive, long pending, long failed, long abandoned) {
        return new ContextCounters(syncAllocations, asyncAllocations, syncFrees, asyncFrees, bytesLive, 0, 0, 0, 0, 0, 0, 0,
                pending, 0, failed, abandoned);
    }

    private static DevicePoolCounters pool(long retainedBytes, long retainedBlocks, long allocations, long frees) {
        return new DevicePoolCounters(0, 0, retainedBytes, retainedBlocks, allocations, frees, 0);
    }

    private static final ContextCounters BEFORE = counters(10, 4, 6, 4, 4096, 0, 0, 0);
    private static final DevicePoolCounters POOL_BEFORE = pool(2048, 2, 10, 6);

    @Test
    void aRunWhoseAllocationsWereFreedOrRetainedBalances() {
        // 5 more driver allocations, 3 freed, 2 kept by the pool (1024 bytes); 7 stream-ordered, all freed.
        ContextCounters after = counters(15, 11, 9, 11, 4096 + 1024, 0, 0, 0);
        DevicePoolCounters poolAfter = pool(2048 + 1024, 4, 15, 9);
        assertEquals(List.of(), CounterBalance.violations(BEFORE, after, POOL_BEFORE, poolAfter, 7));
    }

    @Test
    void aLeakedDriverAllocationIsNamed() {
        ContextCounters after = counters(15, 4, 8, 4, 4096 + 1024 + 512, 0, 0, 0);
        DevicePoolCounters poolAfter = pool(2048 + 1024, 4, 15, 8);
        List<String> wrong = CounterBalance.violations(BEFORE, after, POOL_BEFORE, poolAfter, 0);
        assertEquals(3, wrong.size(), wrong.toString());
        assertTrue(wrong.get(0).startsWith("5 driver allocations != 2 driver frees + 2 blocks"), wrong.get(0));
        assertTrue(wrong.get(2).contains("bytes live changed by 1536"), wrong.get(2));
    }

    @Test
    void anUnfreedOrUncountedStreamOrderedAllocationIsNamed() {
        ContextCounters after = counters(10, 7, 6, 6, 4096, 0, 0, 0);
        List<String> wrong = CounterBalance.violations(BEFORE, after, POOL_BEFORE, POOL_BEFORE, 2);
        assertEquals(List.of("the context counted 3 stream-ordered allocations, the run made 2",
                "3 stream-ordered allocations but 2 stream-ordered frees"), wrong);
    }

    @Test
    void pendingFailedAndAbandonedRetirementsAreNamed() {
        ContextCounters after = counters(10, 4, 6, 4, 4096, 3, 1, 2);
        assertEquals(List.of("3 retirements still pending after synchronize", "1 retirements failed",
                "2 retirements abandoned"), CounterBalance.violations(BEFORE, after, POOL_BEFORE, POOL_BEFORE, 0));
    }
}
