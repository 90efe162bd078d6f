package dev.gatun.cuda.internal.events;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * The retirement queue of a context reached another power of two of waiting handles (64, 128,
 * 256, ...): closed owners whose last GPU use has not completed yet pile up.
 */
@Name("dev.gatun.RetirementBacklog")
@Label("Retirement Backlog")
@Category("Gatun")
@Description("Closed handles waiting for their last GPU use reached a new power of two (from 64)")
@StackTrace(false)
public final class RetirementBacklogEvent extends Event {

    private static final RetirementBacklogEvent PROBE = new RetirementBacklogEvent();

    @Label("Context")
    public String context;
    @Label("Pending")
    public long pending;

    /** A begun event, or null (nothing allocated) while no recording enables it. */
    public static RetirementBacklogEvent start() {
        return Probes.begun(PROBE, RetirementBacklogEvent::new);
    }
}
