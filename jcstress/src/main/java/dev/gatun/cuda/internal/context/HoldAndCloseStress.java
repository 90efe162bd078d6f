package dev.gatun.cuda.internal.context;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;

/**
 * The hold/close/unhold counter (NativeResource): a hold racing a close. r1: 1 when the hold
 * succeeded; r2: frees once both returned (before the hold, if any, is dropped). A hold that
 * succeeded must keep the handle: freed under it is forbidden, as is a refused hold with no free.
 */
@JCStressTest
@Outcome(id = "1, 0", expect = Expect.ACCEPTABLE, desc = "held first: the close deferred the free")
@Outcome(id = "0, 1", expect = Expect.ACCEPTABLE, desc = "closed first: the hold was refused")
@Outcome(id = "1, 1", expect = Expect.FORBIDDEN, desc = "freed while a hold that succeeded is outstanding")
@Outcome(expect = Expect.FORBIDDEN, desc = "freed twice, or never")
@State
public class HoldAndCloseStress {

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
    public void close() {
        probe.close();
    }

    @Arbiter
    public void frees(II_Result r) {
        r.r2 = probe.frees();
    }
}
