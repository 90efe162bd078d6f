package dev.gatun.cuda.internal.events;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** A graph instantiated into an executable (cuGraphInstantiate). */
@Name("dev.gatun.GraphInstantiate")
@Label("Graph Instantiate")
@Category("Gatun")
@Description("A graph instantiated into an executable")
@StackTrace(false)
public final class GraphInstantiateEvent extends Event {

    private static final GraphInstantiateEvent PROBE = new GraphInstantiateEvent();

    @Label("Device")
    public int device;
    @Label("Instantiated")
    @Description("False when the driver refused")
    public boolean instantiated;

    /** A begun event, or null (nothing allocated) while no recording enables it. */
    public static GraphInstantiateEvent start() {
        return Probes.begun(PROBE, GraphInstantiateEvent::new);
    }
}
