package dev.gatun.cuda.internal.context;

/**
 * A memory pool whose allocation and free counts a stream's {@link StreamLedger} keeps for it
 * while the stream allocates from it (plain fields under the stream's lock, where the pool's own
 * counters cost an atomic update each), and hands back when it lets them go.
 */
public interface LedgerPool {

    /**
     * Takes {@code allocations}, {@code frees} and {@code liveBytes} that a stream's ledger counted
     * for this pool into the pool's own counters; called under that stream's lock, once per
     * handover (the stream allocates from another pool, or is drained).
     */
    void fold(long allocations, long frees, long liveBytes);
}
