package dev.gatun.cuda.internal.transfer;

/**
 * The byte ranges the copies of one batch write and read, and the check that no copy writes
 * bytes another copy of the batch writes or reads: the driver runs a batch's copies in no
 * particular order, so such a batch has no defined result. Device memory and host memory are
 * separate spaces (a host range never overlaps a device range).
 *
 * <p><b>Cost.</b> The arrays are allocated once, for the batch's capacity: recording a copy is
 * a few array stores, and {@link #findConflict} allocates nothing. It sorts each space's ranges
 * by start (a merge sort through a scratch array over short runs sorted by insertion, O(n log n),
 * and linear where the ranges come in order already, as a batch filled from a table's blocks in
 * order does), then sweeps them once (see {@link #sweep}). About 1 to 2 µs of CPU for 64 copies
 * ({@code BatchOverlapBenchmark} in runtime-bench; runtime-core/README.md, "Batched copies").
 *
 * <p>Not thread-safe: its batch serializes access.
 */
public final class BatchOverlaps {

    /** Device memory: a batch's device ranges, all of one context. */
    public static final int DEVICE = 0;
    /** Host memory: the pinned buffers' ranges. */
    public static final int HOST = 1;
    /** Runs this short are sorted in place by insertion: cheaper there than merging, and linear on sorted input. */
    private static final int INSERTION_RUN = 16;

    /** Per range (copy {@code i}'s destination at {@code 2i}, its source at {@code 2i + 1}): space, start, end. */
    private final int[] spaces;
    private final long[] starts;
    private final long[] ends;
    /** Range numbers, sorted by space and then start by {@link #findConflict}, and the merge sort's scratch. */
    private final int[] order;
    private final int[] scratch;

    /** The conflict {@link #findConflict} found. */
    private int first;
    private boolean firstWrites;
    private int second;
    private boolean secondWrites;
    private int space;
    private long overlapStart;
    private long overlapEnd;

    /** Arrays for up to {@code capacity} copies. */
    public BatchOverlaps(int capacity) {
        spaces = new int[2 * capacity];
        starts = new long[2 * capacity];
        ends = new long[2 * capacity];
        order = new int[2 * capacity];
        scratch = new int[2 * capacity];
    }

    /**
     * Records copy {@code i}: {@code bytes} (more than 0) written at {@code destination} in
     * {@code destinationSpace} and read from {@code source} in {@code sourceSpace}.
     */
    public void set(int i, int destinationSpace, long destination, int sourceSpace, long source, long bytes) {
        spaces[2 * i] = destinationSpace;
        starts[2 * i] = destination;
        ends[2 * i] = destination + bytes;
        spaces[2 * i + 1] = sourceSpace;
        starts[2 * i + 1] = source;
        ends[2 * i + 1] = source + bytes;
    }

    /**
     * Whether two of the first {@code count} copies conflict: one writes bytes the other writes
     * or reads (ranges that only touch, one ending where the other starts, do not). When they do,
     * the accessors ({@link #first()} ...) describe the first conflict the sweep met.
     */
    public boolean findConflict(int count) {
        int n = 2 * count;
        // The device ranges first, then the host ranges, each in the order added: a batch filled
        // in address order (uploads into a cache's blocks in order, say) is then sorted already.
        int devices = 0;
        for (int r = 0; r < n; r++) {
            if (spaces[r] == DEVICE) {
                order[devices++] = r;
            }
        }
        for (int r = 0, h = devices; r < n; r++) {
            if (spaces[r] == HOST) {
                order[h++] = r;
            }
        }
        sort(0, devices);
        sort(devices, n);
        return sweep(0, devices, DEVICE) || sweep(devices, n, HOST);
    }

    /**
     * Sweeps {@code order[from, to)}, the sorted ranges of {@code inSpace}, keeping per kind
     * (written, read) the range reaching furthest and the furthest of another copy (each copy has
     * one range of each kind, so the two always belong to different copies). A range overlaps one
     * that started no later exactly when that one ends past its start, so when some earlier range
     * of another copy overlaps a range, the furthest-reaching one of its kind does: the sweep
     * finds a conflict whenever the ranges hold one.
     */
    private boolean sweep(int from, int to, int inSpace) {
        long writeEnd = 0; // the furthest write, and the furthest of another copy
        long writeEnd2 = 0;
        int writeCopy = -1;
        int writeCopy2 = -1;
        long readEnd = 0; // the same for reads
        long readEnd2 = 0;
        int readCopy = -1;
        int readCopy2 = -1;
        for (int k = from; k < to; k++) {
            int r = order[k];
            int copy = r >> 1;
            boolean written = (r & 1) == 0; // a destination, else a source
            long start = starts[r];
            long end = ends[r];
            // A write overlaps whatever this range is; a read only if this range is a write.
            int w = writeCopy != copy ? writeCopy : writeCopy2;
            long wEnd = writeCopy != copy ? writeEnd : writeEnd2;
            if (w >= 0 && wEnd > start) {
                return found(w, true, copy, written, inSpace, start, Math.min(wEnd, end));
            }
            if (written) {
                int rd = readCopy != copy ? readCopy : readCopy2;
                long rdEnd = readCopy != copy ? readEnd : readEnd2;
                if (rd >= 0 && rdEnd > start) {
                    return found(rd, false, copy, true, inSpace, start, Math.min(rdEnd, end));
                }
                if (writeCopy < 0 || end > writeEnd) {
                    writeEnd2 = writeEnd;
                    writeCopy2 = writeCopy;
                    writeEnd = end;
                    writeCopy = copy;
                } else if (writeCopy2 < 0 || end > writeEnd2) {
                    writeEnd2 = end;
                    writeCopy2 = copy;
                }
            } else if (readCopy < 0 || end > readEnd) {
                readEnd2 = readEnd;
                readCopy2 = readCopy;
                readEnd = end;
                readCopy = copy;
            } else if (readCopy2 < 0 || end > readEnd2) {
                readEnd2 = end;
                readCopy2 = copy;
            }
        }
        return false;
    }

    /** Records the conflict between {@code earlier}'s range and {@code later}'s on [{@code from}, {@code to}). */
    private boolean found(int earlier, boolean earlierWrites, int later, boolean laterWrites, int inSpace, long from,
            long to) {
        first = earlier;
        firstWrites = earlierWrites;
        second = later;
        secondWrites = laterWrites;
        space = inSpace;
        overlapStart = from;
        overlapEnd = to;
        return true;
    }

    /** {@return the space copy {@code i} writes in: {@link #DEVICE} or {@link #HOST}} */
    public int destinationSpace(int i) {
        return spaces[2 * i];
    }

    /** {@return the copy of the conflict found whose range began first (the one the sweep met first)} */
    public int first() {
        return first;
    }

    /** {@return whether {@link #first()} writes the overlapping bytes (else it reads them)} */
    public boolean firstWrites() {
        return firstWrites;
    }

    /** {@return the other copy of the conflict found} */
    public int second() {
        return second;
    }

    /** {@return whether {@link #second()} writes the overlapping bytes (else it reads them)} */
    public boolean secondWrites() {
        return secondWrites;
    }

    /** {@return the space of the conflict found: {@link #DEVICE} or {@link #HOST}} */
    public int space() {
        return space;
    }

    /** {@return the first byte both copies of the conflict found touch} */
    public long overlapStart() {
        return overlapStart;
    }

    /** {@return the byte after the last one both copies of the conflict found touch} */
    public long overlapEnd() {
        return overlapEnd;
    }

    /**
     * Sorts {@code order[from, to)}, ranges of one space, by start: a top-down merge sort through
     * {@link #scratch}, over runs sorted by insertion.
     */
    private void sort(int from, int to) {
        if (to - from <= INSERTION_RUN) {
            for (int k = from + 1; k < to; k++) {
                int r = order[k];
                long start = starts[r];
                int j = k - 1;
                while (j >= from && starts[order[j]] > start) {
                    order[j + 1] = order[j];
                    j--;
                }
                order[j + 1] = r;
            }
            return;
        }
        int middle = (from + to) >>> 1;
        sort(from, middle);
        sort(middle, to);
        if (starts[order[middle - 1]] <= starts[order[middle]]) {
            return; // the halves are in order already
        }
        System.arraycopy(order, from, scratch, from, to - from);
        int i = from;
        int j = middle;
        for (int k = from; k < to; k++) {
            if (j >= to || i < middle && starts[scratch[i]] <= starts[scratch[j]]) {
                order[k] = scratch[i++];
            } else {
                order[k] = scratch[j++];
            }
        }
    }
}
