package dev.gatun.cuda.internal.context;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;

/**
 * A hold without the monitor (it counts, then reads closed and closing) racing closeUnlessHeld
 * (closing set under the monitor, then the holds read). r1: 1 when the hold stood; r2: 1 when
 * the close closed. Exactly one wins: both is a hold on a closed handle, neither a close refused
 * for a hold that was refused too.
 */
@JCStressTest
@Outcome(id = "1, 0", expect = Expect.ACCEPTABLE, desc = "held first: the close refused")
@Outcome(id = "0, 1", expect = Expect.ACCEPTABLE, desc = "closed first: the hold was refused")
@Outcome(id = "1, 1", expect = Expect.FORBIDDEN, desc = "a hold stands on a closed handle")
@Outcome(id = "0, 0", expect = Expect.FORBIDDEN, desc = "both refused")
@State
public class HoldAndCloseUnlessHeldStress {

    private final ProbeResource probe = Probes.probe();

    @Actor
    public void hold(II_Result r) {
        try {
            probe.hold();
            r.r1 = 1;
        } catch (IllegalStateException refused) {
            r.r1 = 0;
        }
    }

    @Actor
    public void close(II_Result r) {
        r.r2 = probe.closeUnlessHeld() ? 1 : 0;
    }
}
