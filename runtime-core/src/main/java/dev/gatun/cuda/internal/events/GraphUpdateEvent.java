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
    @Description("APPLIED, or why not: the driver's CUgraphExecUpdateResult (TOPOLOGY_CHANGED, ...) MEMORY_NODES or ARENA_CHANGED")
    public String result;
    @Label("Error Node")
    @Description("The node of the new graph the driver blamed (CUgraphExecUpdateResultInfo.errorNode), by type and position; null if none")
    public String errorNode;
    @Label("Error From Node")
    @Description("The node of the executable's graph it was compared with (errorFromNode), by type and position; null if none")
    public String errorFromNode;

    /** A begun event, or null (nothing allocated) while no recording enables it. */
    public static GraphUpdateEvent start() {
        return Probes.begun(PROBE, GraphUpdateEvent::new);
    }
}
