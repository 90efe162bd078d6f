package dev.gatun.cuda.internal.events;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** One rung of the out-of-memory ladder (duration: the rung and the retry after it, if any). */
@Name("dev.gatun.OutOfMemoryRung")
@Label("Out Of Memory Rung")
@Category("Gatun")
@Description("One rung of the out-of-memory ladder: retirement, trim or synchronize, and its retry")
@StackTrace(false)
public final class OutOfMemoryRungEvent extends Event {

    private static final OutOfMemoryRungEvent PROBE = new OutOfMemoryRungEvent();

    @Label("Device")
    public int device;
    @Label("Rung")
    @Description("retirement, trim or synchronize")
    public String rung;
    @Label("Retirements Freed")
    public long retirementsFreed;
    @Label("Bytes Released")
    @Description("What a trim gave back to the device")
    @DataAmount
    public long bytesReleased;
    @Label("Retried")
    @Description("Whether the allocation was tried again after the rung: when the rung freed something, and after "
            + "the last")
    public boolean retried;
    @Label("Rescued")
    @Description("Whether that retry succeeded")
    public boolean rescued;

    /** A begun event, or null (nothing allocated) while no recording enables it. */
    public static OutOfMemoryRungEvent start() {
        return Probes.begun(PROBE, OutOfMemoryRungEvent::new);
    }
}
