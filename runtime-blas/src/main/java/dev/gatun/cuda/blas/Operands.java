package dev.gatun.cuda.blas;

import dev.gatun.cuda.DeviceView;
import java.lang.foreign.MemorySegment;

/**
 * A prepared operation's device pointers as the bindings take them ({@code MemorySegment}), one
 * slot per operand, made again only when the operand's address changes: a warm call with the same
 * buffers allocates nothing. Also the array of views handed to {@code Stream.submitForeign}.
 * Not thread-safe, as the operations that own it.
 */
final class Operands {

    private final long[] addresses;
    private final MemorySegment[] segments;
    final DeviceView[] views;

    Operands(int count) {
        addresses = new long[count];
        segments = new MemorySegment[count];
        views = new DeviceView[count];
        java.util.Arrays.fill(segments, MemorySegment.NULL);
    }

    /** Puts {@code view} in slot {@code i}; returns its address as a segment. */
    MemorySegment set(int i, DeviceView view) {
        views[i] = view;
        long address = view.address();
        if (address != addresses[i] || segments[i] == MemorySegment.NULL && address != 0) {
            addresses[i] = address;
            segments[i] = MemorySegment.ofAddress(address);
        }
        return segments[i];
    }

    /** Forgets the views (not the cached addresses), so that no buffer is reachable from here between calls. */
    void clear() {
        java.util.Arrays.fill(views, null);
    }
}
