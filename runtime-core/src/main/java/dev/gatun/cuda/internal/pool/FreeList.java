package dev.gatun.cuda.internal.pool;

import java.util.Arrays;

/**
 * The retained blocks of one size class: a stack of device addresses in a primitive array, so
 * that taking and returning a block boxes nothing and, once the array has grown to the class's
 * working set, allocates nothing. Last in, first out, so the same few blocks circulate while the
 * demand is steady and the rest stay at the bottom, where a trim finds them.
 */
final class FreeList {

    private static final long[] EMPTY = {};

    final long classBytes;
    private long[] addresses = EMPTY;
    private int size;

    FreeList(long classBytes) {
        this.classBytes = classBytes;
    }

    synchronized void push(long address) {
        if (size == addresses.length) {
            addresses = Arrays.copyOf(addresses, Math.max(4, size * 2));
        }
        addresses[size++] = address;
    }

    /** The most recently pushed block, or 0 (never a device block) when empty. */
    synchronized long pop() {
        return size == 0 ? 0 : addresses[--size];
    }
}
