package dev.gatun.cuda.internal.events;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Threshold;

/**
 * A synchronous copy between host and device: ordering after queued work, the copy, the wait.
 * By default only copies of 1 ms or more, without a stack trace (one per small readback would
 * cost more than the readback's own Java work); a recording setting can lower both.
 */
@Name("dev.gatun.SynchronousCopy")
@Label("Synchronous Copy")
@Category("Gatun")
@Description("A copyTo or copyFrom that returns when its bytes have arrived")
@Threshold("1 ms")
@StackTrace(false)
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
