package dev.gatun.cuda.internal.context;

import dev.gatun.cuda.ContextCounters;
import java.util.concurrent.atomic.LongAdder;

/**
 * A context's running counters; {@code ContextDiagnostics.counters()} takes a {@link #snapshot}. The
 * stream-ordered allocations and frees, and their bytes, are counted partly here (frees made by
 * retirement) and partly in each stream's {@link StreamLedger} (the hot path, under the stream's
 * lock): a snapshot adds the two.
 */
public final class ContextStats {
    private final LongAdder asyncAllocations = new LongAdder();
    private final LongAdder asyncFrees = new LongAdder();
    private final LongAdder bytesLive = new LongAdder();
    /** The live owners counted by drained streams' ledgers (see {@link #ledgerOwners}). */
    private final LongAdder foldedOwners = new LongAdder();
    public final LongAdder hostToDeviceCopies = new LongAdder();
    public final LongAdder hostToDeviceBytes = new LongAdder();
    public final LongAdder deviceToHostCopies = new LongAdder();
    public final LongAdder deviceToHostBytes = new LongAdder();
    public final LongAdder deviceToDeviceCopies = new LongAdder();
    public final LongAdder deviceToDeviceBytes = new LongAdder();
    public final LongAdder forcedSynchronizations = new LongAdder();
    public final LongAdder retirementsCompleted = new LongAdder();
    public final LongAdder retirementsFailed = new LongAdder();
    public final LongAdder retirementsAbandoned = new LongAdder();
    /** Allocations made inside Gatun captures ({@link GraphAllocations}): made, and not yet retired (count, bytes). */
    public final LongAdder graphAllocations = new LongAdder();
    public final LongAdder graphAllocationsLive = new LongAdder();
    public final LongAdder graphAllocationBytesLive = new LongAdder();
    /** Pinned host bytes allocated and not yet freed, and physical chunks mapped into growable buffers (cold paths: for memory reports). */
    public final LongAdder pinnedBytesLive = new LongAdder();
    public final LongAdder growableBytesMapped = new LongAdder();

    /**
     * Guards the move of a drained stream's ledger into the adders ({@link #fold}) against the sums
     * that read both, so each allocation is counted once. Taken before a stream's lock, never under one.
     */
    private final Object ledgers = new Object();
    private final SyncOrdering streams;

    ContextStats(SyncOrdering streams) {
        this.streams = streams;
    }

    /** The context's device pool, once attached: its driver calls and bytes are counted there. */
    private volatile DevicePoolTally devicePool = DevicePoolTally.NONE;

    /** Reports {@code pool}'s driver allocations, frees and bytes in the counters; once, as the context opens. */
    public void attach(DevicePoolTally pool) {
        devicePool = pool;
    }

    /** Counts a stream-ordered free that retirement made (not in a stream's order that a ledger counts). */
    public void retiredAsyncFree(long bytes) {
        asyncFrees.increment();
        bytesLive.add(-bytes);
    }

    /** Bytes of the stream-ordered allocations ({@code Stream.allocate}, {@code MemoryPool.allocate}) not yet freed. */
    public long streamOrderedBytesLive() {
        return sums()[2];
    }

    /**
     * The counters now, with the number of retirements still waiting for their evidence. The
     * live bytes are the owners': the device pool's blocks handed out (its bytes from the driver
     * less those it retains for reuse, which no owner holds) and the stream-ordered allocations'.
     */
    public ContextCounters snapshot(long pendingRetirements) {
        long[] ordered = sums();
        DevicePoolTally pool = devicePool;
        long retained = pool.retainedBytes();
        return new ContextCounters(pool.driverAllocations(), ordered[0], pool.driverFrees(), ordered[1],
                ordered[2] + pool.driverBytes() - retained, retained, hostToDeviceCopies.sum(), hostToDeviceBytes.sum(),
                deviceToHostCopies.sum(), deviceToHostBytes.sum(), deviceToDeviceCopies.sum(), deviceToDeviceBytes.sum(),
                forcedSynchronizations.sum(), pendingRetirements, retirementsCompleted.sum(), retirementsFailed.sum(),
                retirementsAbandoned.sum());
    }

    /** Stream-ordered allocations, frees and live bytes: the adders plus every registered stream's ledger. */
    private long[] sums() {
        synchronized (ledgers) {
            long[] sums = {asyncAllocations.sum(), asyncFrees.sum(), bytesLive.sum(), foldedOwners.sum()};
            for (StreamState s : streams.registeredStreams()) {
                synchronized (s.lock()) {
                    s.ledger().addTo(sums);
                }
            }
            return sums;
        }
    }

    /**
     * Adds to {@code sums} (allocations, frees, live bytes) what every registered stream's ledger
     * counts for {@code pool} now. Never call it under a stream's lock (it takes each in turn,
     * after the lock that orders them). A ledger may hand its counts back to the pool meanwhile
     * (it allocated from another pool): the pool tells such a read and makes it again.
     */
    public void addPoolCounts(LedgerPool pool, long[] sums) {
        synchronized (ledgers) {
            for (StreamState s : streams.registeredStreams()) {
                synchronized (s.lock()) {
                    s.ledger().addPoolCounts(pool, sums);
                }
            }
        }
    }

    /**
     * The live owners that count their life on stream ledgers ({@code NativeResource.countsLifeOnStream}),
     * less those of them closed elsewhere, which the context's own count took off: add it to that count.
     */
    long ledgerOwners() {
        return sums()[3];
    }

    /** Moves a stream's final ledger into the adders; call once the stream is closed, before it is deregistered. */
    void fold(StreamState stream) {
        synchronized (ledgers) {
            synchronized (stream.lock()) {
                stream.ledger().moveTo(asyncAllocations, asyncFrees, bytesLive, foldedOwners);
            }
        }
    }
}
