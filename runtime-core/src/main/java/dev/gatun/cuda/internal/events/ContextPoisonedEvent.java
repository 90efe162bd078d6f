package dev.gatun.cuda.internal.events;

import jdk.jfr.Category;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;

/** A sticky error poisoned a context: every later call on it fails fast. */
@Name("dev.gatun.ContextPoisoned")
@Label("Context Poisoned")
@Category("Gatun")
@Description("A sticky CUDA error poisoned a context")
public final class ContextPoisonedEvent extends Event {

    private static final ContextPoisonedEvent PROBE = new ContextPoisonedEvent();

    @Label("Device")
    public int device;
    @Label("Operation")
    public String operation;
    @Label("Result")
    public String result;
    @Label("GPU Coredump File")
    @Description("The dump the driver wrote, when GPU coredumps were on (null when off)")
    public String coredumpFile;

    /** A begun event, or null (nothing allocated) while no recording enables it. */
    public static ContextPoisonedEvent start() {
        return Probes.begun(PROBE, ContextPoisonedEvent::new);
    }
}
