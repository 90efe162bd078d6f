package dev.gatun.cuda.internal.memory;

import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.Retirement;

/**
 * One allocation a capture made from a capture arena ({@code Stream.allocate} while capturing
 * into a {@code CaptureArena}): the range [offset, offset + size) of the arena's
 * {@link VmmReservation}, which owns the memory. Its retirement frees nothing; it only lets go of
 * the reservation, once the work queued on the streams that used it (the graph's replays, held
 * through the graph) has completed. It always lies inside the mapped chunks: the arena hands out
 * nothing past them (a probe's allocations are the driver's allocation nodes instead).
 */
public final class ArenaBlock extends DeviceMemory {

    private final VmmReservation reservation;
    private final long offset;

    ArenaBlock(ContextState context, VmmReservation reservation, long offset, long size) {
        reservation.hold(); // first: a reservation closed meanwhile refuses, before the block counts as live
        super(context, reservation.base + offset, size, null);
        this.reservation = reservation;
        this.offset = offset;
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
        return "DeviceBuffer#" + id() + " (bytes [" + offset + ", " + (offset + size) + ") of the capture arena "
                + "over GrowableBuffer#" + reservation.id() + ", device " + reservation.device + ")";
    }
}
