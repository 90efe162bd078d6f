package dev.gatun.cuda.bench;

/**
 * The floor under a row: its driver calls made as bare FFM downcalls
 * ({@link RawDowncallBenchmark}'s handles and operations: no owner, no checked layer, no
 * bookkeeping), timed the way both twins time theirs (a warm-up of N/2, then N, one final
 * synchronize). {@link SameProcess} runs it beside the C and Gatun twins with {@code --bare}
 * (compare's {@code BARE=1}), so that the table shows, from the same process and slices, what the
 * Java-to-C transition alone costs over C and what Gatun costs over it. Only the rows whose whole
 * operation is two driver calls on one stream have one: the stream-ordered allocate + free and
 * the event record + query.
 */
final class BareTwin {

    /** One operation of a row, as bare downcalls. */
    private interface Operation {
        void run() throws Throwable;
    }

    private BareTwin() {
    }

    /** Whether {@code row} has a bare twin. */
    static boolean covers(TwinRow row) {
        return row == TwinRow.ALLOC_STREAM_ORDERED || row == TwinRow.EVENT_RECORD_QUERY;
    }

    /**
     * The timed nanoseconds of {@code n} operations of {@code row}, on a stream and event of its
     * own (the device's primary context, retained and released around the run).
     *
     * @throws IllegalArgumentException when the row has no bare twin, or {@code n} is not positive
     */
    static long measure(TwinRow row, int n) throws Throwable {
        if (!covers(row) || n <= 0) {
            throw new IllegalArgumentException(row.id() + " with N " + n + ": only " + TwinRow.ALLOC_STREAM_ORDERED.id()
                    + " and " + TwinRow.EVENT_RECORD_QUERY.id() + " have a bare twin, with N more than 0");
        }
        RawDowncallBenchmark.Driver driver = new RawDowncallBenchmark.Driver();
        driver.open();
        try {
            RawDowncallBenchmark calls = new RawDowncallBenchmark();
            Operation operation = row == TwinRow.ALLOC_STREAM_ORDERED ? () -> calls.streamOrderedAllocateAndFree(driver)
                    : () -> calls.recordAndQueryEvent(driver);
            for (int i = 0; i < n / 2; i++) {
                operation.run();
            }
            driver.drain();
            long start = System.nanoTime();
            for (int i = 0; i < n; i++) {
                operation.run();
            }
            driver.drain();
            return System.nanoTime() - start;
        } finally {
            driver.close();
        }
    }
}
