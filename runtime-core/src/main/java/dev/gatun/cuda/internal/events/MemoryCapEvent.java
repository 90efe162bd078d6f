package dev.gatun.cuda.internal.events;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * A pool's cap acted: a request refused by its hard cap, or an idle pool trimmed down to its soft
 * limit. A refusal then climbs the out-of-memory ladder ({@link OutOfMemoryEvent}, with the stack).
 */
@Name("dev.gatun.MemoryCap")
@Label("Memory Cap")
@Category("Gatun")
@Description("A pool's hard cap refused a request, or an idle pool above its soft limit was trimmed")
@StackTrace(false)
public final class MemoryCapEvent extends Event {

    private static final MemoryCapEvent PROBE = new MemoryCapEvent();

    @Label("Pool")
    public String pool;
    @Label("Action")
    @Description("hard cap refusal, or soft limit trim")
    public String action;
    @Label("Bytes")
    @Description("The request refused, or the bytes the trim gave back")
    @DataAmount
    public long bytes;

    /** A begun event, or null (nothing allocated) while no recording enables it. */
    public static MemoryCapEvent start() {
        return Probes.begun(PROBE, MemoryCapEvent::new);
    }

    /** Commits one cap event, if a recording enables it. */
    public static void record(String pool, String action, long bytes) {
        MemoryCapEvent event = start();
        if (event != null) {
            event.pool = pool;
            event.action = action;
            event.bytes = bytes;
            event.commit();
        }
    }
}
