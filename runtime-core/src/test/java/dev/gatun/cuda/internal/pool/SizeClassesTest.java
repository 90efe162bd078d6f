package dev.gatun.cuda.internal.pool;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import net.jqwik.api.Assume;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;

class SizeClassesTest {

    private static final long MIB = 1L << 20;
    private static final int LAST_INDEX = SizeClasses.index(SizeClasses.LARGEST);

    @Property
    void aRequestGetsTheSmallestClassThatHoldsIt(@ForAll @LongRange(min = 1, max = 1L << 30) long bytes) {
        long c = SizeClasses.classBytes(bytes);
        int i = SizeClasses.index(c);
        assertTrue(c >= bytes, c + " undersizes " + bytes);
        assertEquals(c, SizeClasses.classAt(i), c + " is not a class");
        assertTrue(i == 0 || SizeClasses.classAt(i - 1) < bytes, "class " + SizeClasses.classAt(i - 1) + " also holds " + bytes);
    }

    @Property
    void requestsNextToAClassBoundaryGetTheRightClass(@ForAll @IntRange(min = 0, max = 1034) int index,
            @ForAll @IntRange(min = -1, max = 1) int offset) {
        long c = SizeClasses.classAt(index);
        long bytes = c + offset;
        Assume.that(bytes <= SizeClasses.LARGEST); // past the last class: see sizesWithoutAClassAreRejected
        // Classes are more than a byte apart: one byte under a class still needs it, one over needs the next.
        long expected = offset <= 0 ? c : SizeClasses.classAt(index + 1);
        assertEquals(expected, SizeClasses.classBytes(bytes), "class of " + bytes);
    }

    @Property
    void classesAreDenselyNumberedAndIncreasing(@ForAll @IntRange(min = 0, max = 1033) int index) {
        assertEquals(index, SizeClasses.index(SizeClasses.classAt(index)));
        assertTrue(SizeClasses.classAt(index) < SizeClasses.classAt(index + 1));
    }

    @Property
    void floorClassIsTheLargestClassWithinTheLimit(@ForAll @LongRange(min = 0, max = 1L << 32) long limit) {
        long f = SizeClasses.floorClass(limit);
        if (limit < SizeClasses.SMALLEST) {
            assertEquals(0, f);
            return;
        }
        int i = SizeClasses.index(f);
        assertEquals(f, SizeClasses.classAt(i), f + " is not a class");
        assertTrue(f <= limit);
        assertTrue(i == LAST_INDEX || SizeClasses.classAt(i + 1) > limit, "a larger class fits in " + limit);
    }

    @Example
    void boundaries() {
        assertEquals(512, SizeClasses.classBytes(1));
        assertEquals(512, SizeClasses.classBytes(512));
        assertEquals(1024, SizeClasses.classBytes(513));
        assertEquals(1024, SizeClasses.classBytes(1024));
        assertEquals(2048, SizeClasses.classBytes(1025));
        assertEquals(MIB, SizeClasses.classBytes(MIB - 1));
        assertEquals(MIB, SizeClasses.classBytes(MIB));
        assertEquals(2 * MIB, SizeClasses.classBytes(MIB + 1));
        assertEquals(6 * MIB, SizeClasses.classBytes(5 * MIB + MIB / 2));
        assertEquals(6 * MIB, SizeClasses.classBytes(6 * MIB));
        assertEquals(1L << 30, SizeClasses.classBytes(1L << 30));
        assertEquals(0, SizeClasses.index(512));
        assertEquals(11, SizeClasses.index(MIB));
        assertEquals(12, SizeClasses.index(2 * MIB));
        assertEquals(1034, LAST_INDEX);
    }

    @Example
    void sizesWithoutAClassAreRejected() {
        assertThrows(IllegalArgumentException.class, () -> SizeClasses.classBytes(0));
        assertThrows(IllegalArgumentException.class, () -> SizeClasses.classBytes(-1));
        assertThrows(IllegalArgumentException.class, () -> SizeClasses.classBytes(Long.MIN_VALUE));
        assertThrows(IllegalArgumentException.class, () -> SizeClasses.classBytes(SizeClasses.LARGEST + 1));
    }
}
