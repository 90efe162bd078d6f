package dev.gatun.cuda.internal.context;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.I_Result;

/**
 * The close of a held handle racing its last unhold (NativeResource's deferral, review
 * 2026-12-06 section 3.2): whichever comes last retires it, exactly once. r1: frees.
 */
@JCStressTest
@Outcome(id = "1", expect = Expect.ACCEPTABLE, desc = "retired once")
@Outcome(id = "0", expect = Expect.FORBIDDEN, desc = "never retired: the unhold missed the deferral")
@Outcome(expect = Expect.FORBIDDEN, desc = "retired twice")
@State
public class CloseAndLastUnholdStress {

    private final ProbeResource probe = Probes.probe();

    public CloseAndLastUnholdStress() {
        probe.hold();
    }

    @Actor
    public void close() {
        probe.close();
    }

    @Actor
    public void unhold() {
        probe.unhold();
    }

    @Arbiter
    public void frees(I_Result r) {
        r.r1 = probe.frees();
    }
}
