package dev.gatun.cuda.internal.context;

import java.util.concurrent.atomic.LongAdder;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.JJJ_Result;

/**
 * A stream's ledger (StreamLedger) counting an allocate + free at close under the stream's
 * lock, racing the move of the ledger into the context's adders (ContextStats.fold, also under
 * that lock): every count lands exactly once, in the adders or in the ledger. r1, r2, r3: the
 * allocations, frees and live bytes of the adders and the ledger together.
 */
@JCStressTest
@Outcome(id = "1, 1, 0", expect = Expect.ACCEPTABLE, desc = "each count exactly once")
@Outcome(expect = Expect.FORBIDDEN, desc = "a count lost or counted twice")
@State
public class LedgerAndFoldStress {

    private final Object lock = new Object();
    private final StreamLedger ledger = new StreamLedger();
    private final LongAdder allocations = new LongAdder();
    private final LongAdder frees = new LongAdder();
    private final LongAdder bytes = new LongAdder();
    private final LongAdder owners = new LongAdder();

    @Actor
    public void allocateAndFree() {
        synchronized (lock) {
            ledger.allocated(4096);
            ledger.ownerOpened();
        }
        synchronized (lock) {
            ledger.freed(4096);
            ledger.ownerClosed();
        }
    }

    @Actor
    public void fold() {
        synchronized (lock) {
            ledger.moveTo(allocations, frees, bytes, owners);
        }
    }

    @Arbiter
    public void sums(JJJ_Result r) {
        long[] rest = new long[4];
        ledger.addTo(rest);
        r.r1 = allocations.sum() + rest[0];
        r.r2 = frees.sum() + rest[1];
        r.r3 = bytes.sum() + rest[2] + owners.sum() + rest[3];
    }
}
