package dev.gatun.cuda.internal.context;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.I_Result;

/**
 * A recycled resource's stream list (StreamUsage) reset for its next life while a use refused
 * late, from its last life, still lists its stream. Whatever lands of the late listing, the
 * next life's own use of that stream must be listed: the arbiter, standing for the next life,
 * uses {@code OTHER} and asks for the sole stream, which must then be none (two are used).
 * r1: 1 when it is, 0 when the use took the fast path on a stale "last" and listed nothing.
 */
@JCStressTest
@Outcome(id = "1", expect = Expect.ACCEPTABLE, desc = "the next life's use is listed")
@Outcome(id = "0", expect = Expect.FORBIDDEN, desc = "a stale listing hid the next life's use: freed without its fence")
@State
public class ResetAndLateUseStress {

    private final StreamUsage usage = new StreamUsage(Probes.ORIGIN);

    @Actor
    public void lateUse() {
        usage.add(Probes.OTHER, Probes.CONTEXT);
    }

    @Actor
    public void reuse() {
        usage.reset(Probes.ORIGIN);
    }

    @Arbiter
    public void nextLife(I_Result r) {
        usage.add(Probes.OTHER, Probes.CONTEXT);
        r.r1 = usage.sole() == null ? 1 : 0;
    }
}
