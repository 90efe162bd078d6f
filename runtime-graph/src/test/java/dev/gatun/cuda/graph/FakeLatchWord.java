package dev.gatun.cuda.graph;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * A CPU stand-in for the latch's device word: kernels "raise" bits with {@link #raise}, the clear
 * takes effect at once (as if the stream had caught up), and either call can be made to fail.
 * Its success paths allocate nothing, so the allocation test can use it.
 */
final class FakeLatchWord implements LatchDeviceWord {

    static final class FakeWordException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        FakeWordException(String call) {
            super("injected device failure in " + call);
        }
    }

    private final AtomicInteger bits = new AtomicInteger();
    private final AtomicInteger clears = new AtomicInteger();
    private final AtomicInteger reads = new AtomicInteger();
    private final AtomicInteger readAttempts = new AtomicInteger();
    private final AtomicInteger clearsToFail = new AtomicInteger();
    private final AtomicInteger readsToFail = new AtomicInteger();

    /** What a kernel's {@code gatun_latch_raise} does. */
    void raise(int raised) {
        bits.getAndAccumulate(raised, (current, more) -> current | more);
    }

    int bits() {
        return bits.get();
    }

    /** Successful clears. */
    int clears() {
        return clears.get();
    }

    /** Successful reads. */
    int reads() {
        return reads.get();
    }

    int readAttempts() {
        return readAttempts.get();
    }

    void failNextClears(int count) {
        clearsToFail.set(count);
    }

    void failNextReads(int count) {
        readsToFail.set(count);
    }

    @Override
    public void clearAsync() {
        if (takeFailure(clearsToFail)) {
            throw new FakeWordException("clearAsync");
        }
        bits.set(0);
        clears.incrementAndGet();
    }

    @Override
    public int readAndClear() {
        readAttempts.incrementAndGet();
        if (takeFailure(readsToFail)) {
            throw new FakeWordException("readAndClear");
        }
        reads.incrementAndGet();
        return bits.getAndSet(0);
    }

    private static boolean takeFailure(AtomicInteger remaining) {
        return remaining.getAndUpdate(n -> Math.max(0, n - 1)) > 0;
    }
}
