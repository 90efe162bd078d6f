package dev.gatun.cuda.internal.pool;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.management.ThreadMXBean;
import dev.gatun.cuda.DevicePoolOptions;
import java.lang.management.ManagementFactory;
import org.junit.jupiter.api.Test;

/**
 * A warmed hit allocates no Java objects. Measured with the JVM's per-thread allocation counter
 * over many cycles: any per-call allocation (16 bytes at least) would add up to megabytes, far
 * above the slack left for the counter's own noise.
 */
class DevicePoolAllocationTest {

    private static final int CYCLES = 200_000;
    private static final long SLACK = CYCLES / 4;

    private final ThreadMXBean threads = (ThreadMXBean) ManagementFactory.getThreadMXBean();

    private long allocatedByCycles(DevicePool pool, int cycles) {
        long before = threads.getCurrentThreadAllocatedBytes();
        for (int i = 0; i < cycles; i++) {
            long a = pool.acquire(1000);
            pool.release(a, 1000);
        }
        return threads.getCurrentThreadAllocatedBytes() - before;
    }

    @Test
    void aWarmedHitAllocatesNothing() {
        assertTrue(threads.isThreadAllocatedMemorySupported() && threads.isThreadAllocatedMemoryEnabled(),
                "this JVM cannot count allocations per thread");
        DevicePool pool = new DevicePool(new FakeBackend(), new DevicePoolOptions(DevicePoolOptions.DEFAULT_BOUND, false));
        allocatedByCycles(pool, CYCLES); // warm: the free list grows once, the JIT compiles

        long allocated = allocatedByCycles(pool, CYCLES);
        assertTrue(allocated < SLACK, allocated + " bytes allocated over " + CYCLES + " warmed hits");
        assertEquals(1, pool.counters().misses());
    }

    @Test
    void theMeasurementSeesAllocationWhenThereIsSome() {
        DevicePool pool = new DevicePool(new FakeBackend(), new DevicePoolOptions(DevicePoolOptions.DEFAULT_BOUND, true));
        allocatedByCycles(pool, 1000);
        long allocated = allocatedByCycles(pool, 1000);
        assertTrue(allocated > SLACK, "profiling walks the stack per call, yet only " + allocated + " bytes were seen");
    }
}
