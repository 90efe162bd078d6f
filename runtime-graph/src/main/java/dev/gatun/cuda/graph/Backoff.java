package dev.gatun.cuda.graph;

/**
 * How the lock-free protocols here wait for another thread to finish a short step it has claimed
 * (a launch call, a latch attach, a latch read): spin briefly, since the step is usually a few
 * microseconds of host work, then yield so that a preempted owner of the step can run.
 */
final class Backoff {

    private static final int SPINS_BEFORE_YIELD = 64;

    private Backoff() {
    }

    static void pause(int attempt) {
        if (attempt < SPINS_BEFORE_YIELD) {
            Thread.onSpinWait();
        } else {
            Thread.yield();
        }
    }
}
