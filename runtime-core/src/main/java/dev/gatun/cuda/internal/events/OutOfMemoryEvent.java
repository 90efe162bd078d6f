package dev.gatun.cuda.internal.events;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;

/**
 * An allocation that ran out of memory and climbed the out-of-memory ladder (duration: the whole
 * climb, retries included); its rungs are {@link OutOfMemoryRungEvent}s. Rare, so it keeps the
 * stack trace: it shows who allocated.
 */
@Name("dev.gatun.OutOfMemory")
@Label("Out Of Memory")
@Category("Gatun")
@Description("An allocation that got CUDA_ERROR_OUT_OF_MEMORY (or passed a pool's hard cap) and climbed the ladder")
public final class OutOfMemoryEvent extends Event {

    private static final OutOfMemoryEvent PROBE = new OutOfMemoryEvent();

    @Label("Device")
    public int device;
    @Label("Allocation")
    @Description("What was allocated: device pool block, stream-ordered, memory pool, pinned, growable buffer growth, "
            + "graph instantiation")
    public String allocation;
    @Label("Requested")
    @DataAmount
    public long requested;
    @Label("Outcome")
    @Description("The rung after which the retry succeeded, failed, or not climbed (a capture open on the thread)")
    public String outcome;

    /** A begun event, or null (nothing allocated) while no recording enables it. */
    public static OutOfMemoryEvent start() {
        return Probes.begun(PROBE, OutOfMemoryEvent::new);
    }
}
