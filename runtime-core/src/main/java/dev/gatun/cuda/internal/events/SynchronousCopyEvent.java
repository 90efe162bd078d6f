package dev.gatun.cuda.internal.events;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** A synchronous copy between host and device: ordering after queued work, the copy, the wait. */
@Name("dev.gatun.SynchronousCopy")
@Label("Synchronous Copy")
@Category("Gatun")
@Description("A copyTo or copyFrom that returns when its bytes have arrived")
public final class SynchronousCopyEvent extends Event {

    private static final SynchronousCopyEvent PROBE = new SynchronousCopyEvent();

    @Label("Device")
    public int device;
    @Label("Direction")
    @Description("host-to-device or device-to-host")
    public String direction;
    @Label("Size")
    @DataAmount
    public long bytes;
    @Label("Staged")
    @Description("Copied through pinned staging blocks (a Java heap or other non-native segment)")
    public boolean staged;

    /** A begun event, or null (nothing allocated) while no recording enables it. */
    public static SynchronousCopyEvent start() {
        return Probes.begun(PROBE, SynchronousCopyEvent::new);
    }
}
