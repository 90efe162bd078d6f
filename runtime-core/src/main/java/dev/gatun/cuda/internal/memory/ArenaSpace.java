package dev.gatun.cuda.internal.memory;

import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.StreamState;
import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * The allocator and replay order of a capture arena ({@code CaptureArena}), over the
 * {@link VmmReservation} of its growable buffer.
 *
 * <p><b>Allocation.</b> Each capture into the arena has its own {@link Cursor}, which starts at
 * offset 0 and only moves up: every {@code Stream.allocate} in the capture takes the next
 * {@link #ALIGNMENT}-aligned range. A free inside the capture gives nothing back, since streams
 * that joined the capture may still use the range in the graph's order, which the arena cannot
 * see; everything comes back when the capture ends (the next capture starts at 0 again). So two
 * captures of the same shape get the same addresses, and graphs captured one after another
 * overlap: they share the arena's memory, and must never run at the same time.
 *
 * <p><b>Replays.</b> {@link #orderReplay} makes each replay of a graph of this arena wait for
 * the replays queued before it on other streams (an event of the context's synchronous stream,
 * recorded after waits for them). Replays on one stream are in order already: they pay one
 * uncontended monitor and no driver call.
 */
public final class ArenaSpace {

    /** Every allocation starts at a multiple of this, as {@code cuMemAlloc}'s do. */
    public static final long ALIGNMENT = 256;

    private final ContextState context;
    private final VmmReservation reservation;
    /** Guards the counters. */
    private final Object lock = new Object();
    private long peakBytes;
    private long captures;
    private long probes;
    private long overflows;
    private long orderedReplays;
    /** Guards {@link #lastReplay} and makes "wait for the last replay, launch, become the last" one step. */
    private final Object replays = new Object();
    /** The usable bytes: only grows, since an arena never shrinks. */
    private volatile long usable;
    /** The stream the last replay of a graph of this arena was queued on; null before the first. */
    private StreamState lastReplay;

    public ArenaSpace(ContextState context, VmmReservation reservation) {
        this.context = context;
        this.reservation = reservation;
    }

    /** One capture's position in the arena (used under the capturing stream's lock). */
    public final class Cursor {
        private final boolean measuring;
        private long top;

        private Cursor(boolean measuring) {
            this.measuring = measuring;
        }

        /** {@return whether this capture only measures (a probe: its allocations are memory nodes, and it is aborted)} */
        public boolean measuring() {
            return measuring;
        }

        /** {@return the bytes this capture has taken so far: its peak, since it never gives back} */
        public long peakBytes() {
            return top;
        }

        /**
         * The next {@code bytes} (more than 0) of the arena, or null when they do not fit past
         * the usable size; the caller reports that.
         */
        public ArenaBlock allocate(long bytes) {
            long start = top;
            if (!fits(bytes, usableBytes())) {
                return null;
            }
            ArenaBlock block = new ArenaBlock(context, reservation, start, bytes);
            top = start + roundUp(bytes);
            return block;
        }

        /**
         * Counts {@code bytes} (more than 0) as a capture into the arena would take them, for a
         * probe, whose allocations come from elsewhere; false, counting nothing, when they would
         * not fit the reserved range.
         */
        public boolean measure(long bytes) {
            if (!fits(bytes, reservation.reservedBytes())) {
                return false;
            }
            top += roundUp(bytes);
            return true;
        }

        /**
         * Whether {@code bytes} starting at the cursor end within {@code limit}. The padding that
         * aligns the next allocation need not fit: an allocation of exactly what ensure asked for
         * fits an empty capture, whatever the alignment.
         */
        private boolean fits(long bytes, long limit) {
            long end = top + bytes;
            if (end < top || end > limit) {
                synchronized (lock) {
                    overflows++;
                }
                return false;
            }
            return true;
        }

        /** The capture is over (ended, aborted or invalidated): its peak counts for the arena. */
        public void close() {
            synchronized (lock) {
                if (measuring) {
                    probes++;
                } else {
                    captures++;
                }
                peakBytes = Math.max(peakBytes, top);
            }
        }

        /** {@return the usable size a further {@code bytes} would need: this capture's (aligned) top plus them} */
        public long neededFor(long bytes) {
            return top + bytes;
        }
    }

    private static long roundUp(long bytes) {
        long r = (bytes + ALIGNMENT - 1) & -ALIGNMENT;
        return r < bytes ? Long.MAX_VALUE : r;
    }

    /** A cursor for a new capture into this arena; {@code measuring} for a probe. */
    public Cursor open(boolean measuring) {
        reservation.checkOpen();
        return new Cursor(measuring);
    }

    /** {@return the bytes captures may take now (CaptureArena.byteSize): what ensure asked for, at most the chunks mapped} */
    public long usableBytes() {
        return usable;
    }

    /**
     * The arena grew to {@code size} usable bytes (after the growth, out of the reservation's
     * lock). Kept here, not read from the reservation: a growth reaps under the reservation's
     * lock, which may take stream locks, and an allocation asks under its stream's lock.
     */
    public void grown(long size) {
        synchronized (lock) {
            usable = Math.max(usable, size);
        }
    }

    /**
     * Orders a replay on {@code stream} after the replays of this arena's graphs queued before it
     * on other streams, then runs {@code launch} (which takes {@code stream}'s lock and queues the
     * replay); call with no stream's lock held. Same-stream replays make no driver call and
     * allocate nothing.
     */
    public void orderReplay(StreamState stream, Replay launch) {
        synchronized (replays) {
            StreamState last = lastReplay;
            MemorySegment relay = last == null || last == stream ? null : context.ordering().relayAfter(List.of(last));
            try {
                launch.launch(stream, relay);
            } finally {
                // Even after a failure: the replay may have been queued, and the next one elsewhere must wait for it.
                lastReplay = stream;
                if (relay != null) {
                    context.events().release(relay); // the wait on it is queued (or nothing is)
                    synchronized (lock) {
                        orderedReplays++;
                    }
                }
            }
        }
    }

    /** A replay queued by {@link #orderReplay}: one per executable, made once, so a replay allocates nothing. */
    @FunctionalInterface
    public interface Replay {
        /**
         * Queues the replay on {@code stream}; when {@code relay} is not null, first makes the
         * stream wait on it (under the stream's lock).
         */
        void launch(StreamState stream, MemorySegment relay);
    }

    /** {@return peak, captures, probes, overflows, cross-stream orderings: one consistent snapshot} */
    public long[] figures() {
        synchronized (lock) {
            return new long[] {peakBytes, captures, probes, overflows, orderedReplays};
        }
    }

    /** The reservation under the arena. */
    public VmmReservation reservation() {
        return reservation;
    }
}
