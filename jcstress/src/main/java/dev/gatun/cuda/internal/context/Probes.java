package dev.gatun.cuda.internal.context;

import dev.gatun.cuda.TestHooks;
import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.MemorySegment;

/**
 * What the jcstress tests share: one context of the simulated driver, made once per JVM, and two
 * of its streams, never used on the driver (a use only lists them; a {@link ProbeResource} made
 * in {@link #ORIGIN}'s order frees itself at its close without a driver call).
 */
final class Probes {

    static final ContextState CONTEXT = TestHooks.state(new Simulated().context());
    /** Where probes are made, in stream order, as a stream-ordered allocation is. */
    static final StreamState ORIGIN = new StreamState(CONTEXT, MemorySegment.ofAddress(0x5_0001));
    /** Another stream, which a racing use lists. */
    static final StreamState OTHER = new StreamState(CONTEXT, MemorySegment.ofAddress(0x5_0002));

    private Probes() {
    }

    /** A probe made in {@link #ORIGIN}'s order. */
    static ProbeResource probe() {
        return new ProbeResource(CONTEXT, ORIGIN);
    }
}
