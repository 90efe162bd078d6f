package dev.gatun.cuda.internal.transfer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.statistics.Statistics;

/**
 * {@link BatchOverlaps} against the pairwise definition on random batches crowded into a few
 * hundred bytes (so that overlaps, touching ranges and clean batches all come up): it finds a
 * conflict exactly when some pair of copies has one, and the conflict it reports is real (the
 * two copies touch the reported bytes, in the reported space, and one of them writes them).
 */
class BatchOverlapsPropertiesTest {

    /** One copy: spaces 0 (device) or 1 (host), offsets in a small window, 1 to 64 bytes. */
    record Copy(int toSpace, long to, int fromSpace, long from, long bytes) {
    }

    @Provide
    Arbitrary<List<Copy>> batches() {
        Arbitrary<Integer> space = Arbitraries.integers().between(0, 1);
        Arbitrary<Long> offset = Arbitraries.longs().between(0, 400);
        Arbitrary<Copy> copy = Combinators.combine(space, offset, space, offset, Arbitraries.longs().between(1, 64))
                .as(Copy::new);
        return copy.list().ofMinSize(1).ofMaxSize(64);
    }

    private static boolean overlap(int spaceA, long a, int spaceB, long b, long bytesA, long bytesB) {
        return spaceA == spaceB && a < b + bytesB && b < a + bytesA;
    }

    /** Whether copies i and j conflict, by the definition: one's destination meets the other's destination or source. */
    private static boolean conflict(Copy i, Copy j) {
        return overlap(i.toSpace, i.to, j.toSpace, j.to, i.bytes, j.bytes)
                || overlap(i.toSpace, i.to, j.fromSpace, j.from, i.bytes, j.bytes)
                || overlap(j.toSpace, j.to, i.fromSpace, i.from, j.bytes, i.bytes);
    }

    private static BatchOverlaps of(List<Copy> batch) {
        BatchOverlaps o = new BatchOverlaps(batch.size());
        for (int i = 0; i < batch.size(); i++) {
            Copy c = batch.get(i);
            o.set(i, c.toSpace, c.to, c.fromSpace, c.from, c.bytes);
        }
        return o;
    }

    @Property(tries = 2000)
    void findsAConflictExactlyWhenAPairHasOneAndReportsARealOne(@ForAll("batches") List<Copy> batch) {
        boolean expected = false;
        for (int i = 0; i < batch.size() && !expected; i++) {
            for (int j = i + 1; j < batch.size() && !expected; j++) {
                expected = conflict(batch.get(i), batch.get(j));
            }
        }
        Statistics.collect(expected ? "conflict" : "clean");
        BatchOverlaps o = of(batch);
        assertEquals(expected, o.findConflict(batch.size()), batch.toString());
        if (expected) {
            assertTrue(o.first() != o.second());
            assertTrue(o.overlapStart() < o.overlapEnd());
            assertTrue(o.firstWrites() || o.secondWrites(), "two reads never conflict");
            touches(batch.get(o.first()), o.firstWrites(), o);
            touches(batch.get(o.second()), o.secondWrites(), o);
        }
        assertEquals(expected, o.findConflict(batch.size()), "a second check of the same batch agrees");
        Statistics.coverage(checker -> {
            checker.check("conflict").percentage(p -> p > 20);
            checker.check("clean").percentage(p -> p > 20);
        });
    }

    /** The copy's range of the stated kind holds the whole reported overlap, in the reported space. */
    private static void touches(Copy c, boolean writes, BatchOverlaps o) {
        int space = writes ? c.toSpace : c.fromSpace;
        long start = writes ? c.to : c.from;
        assertEquals(o.space(), space);
        assertTrue(start <= o.overlapStart() && o.overlapEnd() <= start + c.bytes, c + " and " + o.overlapStart());
    }

    @Example
    void touchingRangesAndSharedSourcesAreNoConflictButOneSharedByteIs() {
        BatchOverlaps o = new BatchOverlaps(3);
        o.set(0, BatchOverlaps.DEVICE, 0, BatchOverlaps.HOST, 1000, 64);
        o.set(1, BatchOverlaps.DEVICE, 64, BatchOverlaps.HOST, 1000, 64); // touches copy 0, reads the same bytes
        o.set(2, BatchOverlaps.HOST, 0, BatchOverlaps.DEVICE, 1000, 64); // host bytes 0..64, device bytes read elsewhere
        assertFalse(o.findConflict(3));
        o.set(2, BatchOverlaps.DEVICE, 127, BatchOverlaps.HOST, 0, 1); // writes the last byte copy 1 writes
        assertTrue(o.findConflict(3));
        assertEquals(1, o.first());
        assertEquals(2, o.second());
        assertEquals(127, o.overlapStart());
        assertEquals(128, o.overlapEnd());
    }

    @Example
    void aCopyMayReadItsOwnDestinationsNeighbourhoodButNotAnotherCopysWrite() {
        BatchOverlaps o = new BatchOverlaps(2);
        o.set(0, BatchOverlaps.DEVICE, 0, BatchOverlaps.DEVICE, 32, 64); // a copy within one range: itself only
        assertFalse(o.findConflict(1));
        o.set(1, BatchOverlaps.DEVICE, 500, BatchOverlaps.DEVICE, 40, 8); // reads bytes copy 0 writes
        assertTrue(o.findConflict(2));
        assertTrue(o.firstWrites() != o.secondWrites());
    }
}
