package dev.gatun.cuda.internal.events;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** A new graph installed into an updating executable: updated in place, through the spare, or instantiated. */
@Name("dev.gatun.GraphInstall")
@Label("Graph Install")
@Category("Gatun")
@Description("A new graph installed by the update-or-instantiate policy: the path it took and, when the update was refused, why")
@StackTrace(false)
public final class GraphInstallEvent extends Event {

    private static final GraphInstallEvent PROBE = new GraphInstallEvent();

    @Label("Device")
    public int device;
    @Label("Path")
    @Description("UPDATED (in place), SPARE (the spare executable updated and swapped in) or INSTANTIATED")
    public String path;
    @Label("Reason")
    @Description("Why the current executable refused the update (GraphUpdateResult); null when it was updated")
    public String reason;
    @Label("Error Node")
    @Description("The node of the new graph the driver blamed, by type and position; null if none")
    public String errorNode;
    @Label("Error From Node")
    @Description("The node of the executable's graph it was compared with; null if none")
    public String errorFromNode;

    /** A begun event, or null (nothing allocated) while no recording enables it. */
    public static GraphInstallEvent start() {
        return Probes.begun(PROBE, GraphInstallEvent::new);
    }
}
