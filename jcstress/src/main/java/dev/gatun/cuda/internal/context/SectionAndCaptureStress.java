package dev.gatun.cuda.internal.context;

import java.time.Duration;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;

/**
 * The capture gate's lock-free section (CaptureGate): a section that never waits
 * ({@code tryEnterSynchronizing}: one atomic increment, then a read of the capture count) racing
 * a global capture that never waits (a bound of zero: counts itself in, then reads the section
 * count). r1: 1 when the section got in; r2: 1 when the capture did. Both inside at once is
 * forbidden; neither is acceptable (each saw the other's count, and each gave up).
 */
@JCStressTest
@Outcome(id = "1, 0", expect = Expect.ACCEPTABLE, desc = "the section got in; the capture saw it and gave up")
@Outcome(id = "0, 1", expect = Expect.ACCEPTABLE, desc = "the capture got in; the section saw it and deferred")
@Outcome(id = "0, 0", expect = Expect.ACCEPTABLE_INTERESTING, desc = "each saw the other's count")
@Outcome(id = "1, 1", expect = Expect.FORBIDDEN, desc = "a synchronizing call inside a global capture")
@State
public class SectionAndCaptureStress {

    private final CaptureGate gate = new CaptureGate(Duration.ZERO);

    @Actor
    public void section(II_Result r) {
        r.r1 = gate.tryEnterSynchronizing() ? 1 : 0;
    }

    @Actor
    public void capture(II_Result r) {
        try {
            gate.enterCapture();
            r.r2 = 1;
        } catch (CaptureGate.GateException sectionsInside) {
            r.r2 = 0;
        }
    }
}
