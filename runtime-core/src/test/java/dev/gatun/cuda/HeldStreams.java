package dev.gatun.cuda;

import dev.gatun.cuda.testing.Simulated;

/**
 * Holds and releases a stream's queue on the simulated GPU through its internal handle: unlike
 * {@link Stream#handle()}, that does not export the handle, so the context's capture census stays
 * as Gatun's own captures leave it.
 */
final class HeldStreams {

    private HeldStreams() {
    }

    /** Work queued on {@code s} waits until {@link #release}. */
    static void hold(Simulated sim, Stream s) {
        sim.gpu.hold(s.state().handle());
    }

    /** Lets the work queued on {@code s} run. */
    static void release(Simulated sim, Stream s) {
        sim.gpu.release(s.state().handle());
    }
}
