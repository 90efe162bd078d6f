package dev.gatun.cuda.internal.events;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** One module image handed to the driver (cuModuleLoadData), from the check to the result. */
@Name("dev.gatun.ModuleLoad")
@Label("Module Load")
@Category("Gatun")
@Description("A module image loaded into a context's registry")
@StackTrace(false)
public final class ModuleLoadEvent extends Event {

    private static final ModuleLoadEvent PROBE = new ModuleLoadEvent();

    @Label("Device")
    public int device;
    @Label("Registry Name")
    public String name;
    @Label("Artifact")
    public String artifact;
    @Label("Format")
    public String format;
    @Label("Image Size")
    @DataAmount
    public long bytes;
    @Label("Loaded")
    @Description("False when the driver refused the image")
    public boolean loaded;

    /** A begun event, or null (nothing allocated) while no recording enables it. */
    public static ModuleLoadEvent start() {
        return Probes.begun(PROBE, ModuleLoadEvent::new);
    }
}
