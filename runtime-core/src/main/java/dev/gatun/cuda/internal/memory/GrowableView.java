package dev.gatun.cuda.internal.memory;

import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.Retirement;

/**
 * A view of a growable buffer's range [0, size) ({@code GrowableBuffer.mapped()}): memory its
 * {@link VmmReservation} owns, so its retirement frees nothing and only lets go of the
 * reservation, once the work queued on the streams that used the view has completed. The
 * reservation closes it (a shrink below its end, or the buffer's close).
 */
public final class GrowableView extends DeviceMemory {

    private final VmmReservation reservation;
    /** The size a shrink cut this view at, or -1. */
    private volatile long revokedAt = -1;

    GrowableView(ContextState context, VmmReservation reservation, long size) {
        reservation.hold(); // first: a reservation closed meanwhile refuses, before the view counts as live
        super(context, reservation.base, size, null);
        this.reservation = reservation;
    }

    /** Closes the view for a shrink to {@code newSize}, unless a captured graph holds it (then false, and nothing changes). */
    boolean revoke(long newSize) {
        revokedAt = newSize;
        if (!closeUnlessHeld()) {
            revokedAt = -1;
            return false;
        }
        disown();
        return true;
    }

    /** Closes the view as its reservation closes. */
    void closeWithReservation() {
        close();
        disown();
    }

    @Override
    Watch watch() {
        return Watch.NEVER;
    }

    @Override
    protected Retirement.Release howToFree() {
        return Retirement.Release.withoutDriver(reservation::unhold);
    }

    @Override
    protected boolean synchronizingFree() {
        return false;
    }

    @Override
    public String identity() {
        long cut = revokedAt;
        return "DeviceBuffer#" + id() + " (view of bytes [0, " + size + ") of GrowableBuffer#" + reservation.id()
                + ", device " + reservation.device + (cut < 0 ? ")" : "; the buffer shrank to " + cut
                + " bytes, below its end: take a new view with GrowableBuffer.mapped())");
    }
}
