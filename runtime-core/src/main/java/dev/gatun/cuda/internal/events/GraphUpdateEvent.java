package dev.gatun.cuda.internal.events;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** An executable updated in place from another graph (cuGraphExecUpdate). */
@Name("dev.gatun.GraphUpdate")
@Label("Graph Update")
@Category("Gatun")
@Description("An executable updated in place from a graph of the same topology, or found to differ")
@StackTrace(false)
public final class GraphUpdateEvent extends Event {

    private static final GraphUpdateEvent PROBE = new GraphUpdateEvent();

    @Label("Device")
    public int device;
    @Label("Updated In Place")
    @Description("False when the topologies differ (the caller then instantiates anew) or the driver failed")
    public boolean updated;
    @Label("Result")
    @Description("APPLIED, or why not: the driver's CUgraphExecUpdateResult (TOPOLOGY_CHANGED, ...) or MEMORY_NODES")
    public String result;

    /** A begun event, or null (nothing allocated) while no recording enables it. */
    public static GraphUpdateEvent start() {
        return Probes.begun(PROBE, GraphUpdateEvent::new);
    }
}
