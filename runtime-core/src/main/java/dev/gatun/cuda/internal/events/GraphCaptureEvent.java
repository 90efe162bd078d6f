package dev.gatun.cuda.internal.events;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** A stream capture, from its begin to its end or abort. */
@Name("dev.gatun.GraphCapture")
@Label("Graph Capture")
@Category("Gatun")
@Description("A stream capture from begin to end or abort")
@StackTrace(false)
public final class GraphCaptureEvent extends Event {

    private static final GraphCaptureEvent PROBE = new GraphCaptureEvent();

    @Label("Device")
    public int device;
    @Label("Stream")
    public String stream;
    @Label("Mode")
    public String mode;
    @Label("Outcome")
    @Description("ended, aborted or invalidated")
    public String outcome;

    /** A begun event, or null (nothing allocated) while no recording enables it. */
    public static GraphCaptureEvent start() {
        return Probes.begun(PROBE, GraphCaptureEvent::new);
    }
}
