package dev.gatun.cuda.internal.events;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Threshold;

/**
 * A device pool request that found no free block and went to the driver. By default only misses
 * whose allocation took 100 µs or more, without a stack trace (the pool's counters count every
 * miss, and its call-site profile says where they come from); a recording setting can lower both.
 */
@Name("dev.gatun.PoolMiss")
@Label("Device Pool Miss")
@Category("Gatun")
@Description("A device allocation the pool could not serve from its free lists")
@Threshold("100 us")
@StackTrace(false)
public final class PoolMissEvent extends Event {

    private static final PoolMissEvent PROBE = new PoolMissEvent();

    @Label("Requested")
    @DataAmount
    public long requested;
    @Label("Allocated")
    @Description("The size class allocated, or the request itself above the largest pooled size")
    @DataAmount
    public long allocated;
    @Label("Pooled Size")
    @Description("Whether the request is of a size the pool keeps")
    public boolean pooledSize;

    /** A begun event, or null (nothing allocated) while no recording enables it. */
    public static PoolMissEvent start() {
        return Probes.begun(PROBE, PoolMissEvent::new);
    }
}
