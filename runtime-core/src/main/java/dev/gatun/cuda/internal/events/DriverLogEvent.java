package dev.gatun.cuda.internal.events;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * One line of the driver's error log (CUDA 12.9+), recorded as the driver hands it over, on the
 * thread it hands it to. Without a stack trace by default: a driver that logs a warning on every
 * call of a hot path would otherwise pay a stack walk per call; a recording setting turns it on to
 * find the Java call behind a line.
 */
@Name("dev.gatun.DriverLog")
@Label("Driver Log Line")
@Category("Gatun")
@Description("A line of the CUDA driver's error log")
@StackTrace(false)
public final class DriverLogEvent extends Event {

    private static final DriverLogEvent PROBE = new DriverLogEvent();

    @Label("Level")
    @Description("The driver's level: error or warning")
    public String level;
    @Label("Message")
    public String message;

    /** A begun event, or null (nothing allocated) while no recording enables it. */
    public static DriverLogEvent start() {
        return Probes.begun(PROBE, DriverLogEvent::new);
    }
}
