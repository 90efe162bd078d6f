package dev.gatun.cuda.internal.memory;

/** The rungs of the out-of-memory ladder, cheapest first (see {@link LadderRungs} for each). */
enum Rung {
    /** Free what retirement can, after waiting for the fences of closed owners that hold memory. */
    RETIREMENT("retirement"),
    /** Trim Gatun's device pool, the CUDA memory pools and graph memory. */
    TRIM("trim"),
    /** Synchronize, then free what that completed. */
    SYNCHRONIZE("synchronize");

    private final String words;

    Rung(String words) {
        this.words = words;
    }

    @Override
    public String toString() {
        return words;
    }
}
