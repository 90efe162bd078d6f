package dev.gatun.cuda.internal.transfer;

import java.lang.foreign.MemorySegment;

/** Heap segments over the primitive arrays the public copy methods take. */
final class HeapArrays {

    private HeapArrays() {
    }

    /** A segment over {@code array}, one of byte[], short[], int[], long[], float[] or double[]. */
    static MemorySegment segment(Object array) {
        return switch (array) {
            case byte[] a -> MemorySegment.ofArray(a);
            case short[] a -> MemorySegment.ofArray(a);
            case int[] a -> MemorySegment.ofArray(a);
            case long[] a -> MemorySegment.ofArray(a);
            case float[] a -> MemorySegment.ofArray(a);
            case double[] a -> MemorySegment.ofArray(a);
            default -> throw new IllegalArgumentException("not a byte, short, int, long, float or double array: "
                    + array.getClass().getName());
        };
    }
}
