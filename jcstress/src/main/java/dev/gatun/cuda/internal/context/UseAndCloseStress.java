package dev.gatun.cuda.internal.context;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;

/**
 * A use on another stream and the close of a resource made in its origin's order, the two sides
 * of NativeResource's Dekker pair (issue 33 §1): the use lists its stream, then reads the closed
 * state; the close marks it closed, then reads the streams listed. r1: 1 when the use was
 * admitted, 0 when refused; r2: {@link ProbeResource#FREED_ON_ORIGIN} when the close freed at once
 * on the origin alone, {@link ProbeResource#FENCED} when it saw the other stream. Admitted while
 * the close freed on the origin alone is the use-after-free.
 */
@JCStressTest
@Outcome(id = "1, 2", expect = Expect.ACCEPTABLE, desc = "the use came first: the close saw its stream")
@Outcome(id = "0, 1", expect = Expect.ACCEPTABLE, desc = "the close came first: the use was refused")
@Outcome(id = "0, 2", expect = Expect.ACCEPTABLE_INTERESTING, desc = "both saw the other: refused, and fenced anyway")
@Outcome(id = "1, 1", expect = Expect.FORBIDDEN, desc = "admitted, and freed without a fence on its stream")
@State
public class UseAndCloseStress {

    private final ProbeResource probe = Probes.probe();

    @Actor
    public void use(II_Result r) {
        try {
            probe.usedOn(Probes.OTHER);
            r.r1 = 1;
        } catch (IllegalStateException refused) {
            r.r1 = 0;
        }
    }

    @Actor
    public void close(II_Result r) {
        probe.close();
        r.r2 = probe.freedAs();
    }
}
