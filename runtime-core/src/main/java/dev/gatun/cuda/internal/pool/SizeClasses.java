package dev.gatun.cuda.internal.pool;

/**
 * The block sizes the device pool keys its free lists on: powers of two from {@value #SMALLEST}
 * bytes to 1 MiB, then whole MiB up to {@value #LARGEST} bytes.
 *
 * <p>Rounding a request up to its class lets a recycled block serve a slightly different
 * request without ever being too small, and keeps the number of free lists bounded when shapes
 * vary a little between requests. Powers of two waste at most half of a small block; past 1 MiB
 * that would waste too much, so whole MiB bound the waste at 1 MiB per block instead.
 *
 * <p>Classes are numbered densely from 0 ({@value #SMALLEST} bytes): 0..11 are the powers of
 * two up to 1 MiB, and from 12 on class {@code i} is {@code i - 10} MiB.
 */
public final class SizeClasses {

    /** The smallest class; smaller requests share it (the driver's own granularity is coarser). */
    public static final long SMALLEST = 512;

    /** The largest class, 1 GiB. Larger requests bypass the pool: one such block would crowd out the rest. */
    public static final long LARGEST = 1L << 30;

    static final long MIB = 1L << 20;
    private static final int SMALLEST_SHIFT = Long.numberOfTrailingZeros(SMALLEST);
    /** Index of the 1 MiB class, the last power of two. */
    private static final int MIB_INDEX = Long.numberOfTrailingZeros(MIB) - SMALLEST_SHIFT;

    private SizeClasses() {
    }

    /**
     * The class a request of {@code bytes} is served from: the smallest class that holds it.
     *
     * @throws IllegalArgumentException unless 1 <= bytes <= {@link #LARGEST}
     */
    public static long classBytes(long bytes) {
        if (bytes < 1 || bytes > LARGEST) {
            throw new IllegalArgumentException("no size class for " + bytes + " bytes; classes cover 1 to " + LARGEST
                    + " bytes (a 0-byte request needs no block, larger ones bypass the pool)");
        }
        if (bytes <= SMALLEST) {
            return SMALLEST;
        }
        if (bytes <= MIB) {
            return Long.highestOneBit(bytes - 1) << 1;
        }
        return Math.ceilDiv(bytes, MIB) * MIB;
    }

    /** The largest class that is at most {@code limit} bytes, or 0 when {@code limit} is below every class. */
    static long floorClass(long limit) {
        if (limit < SMALLEST) {
            return 0;
        }
        long capped = Math.min(limit, LARGEST);
        return capped <= MIB ? Long.highestOneBit(capped) : capped / MIB * MIB;
    }

    /** The dense number of a class (a value {@link #classBytes} returns). */
    static int index(long classBytes) {
        return classBytes <= MIB
                ? Long.numberOfTrailingZeros(classBytes) - SMALLEST_SHIFT
                : (int) (classBytes / MIB) + MIB_INDEX - 1;
    }

    /** The class numbered {@code index}; the inverse of {@link #index}. */
    static long classAt(int index) {
        return index <= MIB_INDEX ? SMALLEST << index : (index - MIB_INDEX + 1) * MIB;
    }
}
