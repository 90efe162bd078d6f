package dev.gatun.cuda.internal.context;

import dev.gatun.cuda.ContextCounters;
import java.util.concurrent.atomic.LongAdder;

/** A context's running counters; {@code CudaContext.counters()} takes a {@link #snapshot}. */
public final class ContextStats {
    public final LongAdder syncAllocations = new LongAdder();
    public final LongAdder asyncAllocations = new LongAdder();
    public final LongAdder syncFrees = new LongAdder();
    public final LongAdder asyncFrees = new LongAdder();
    public final LongAdder bytesLive = new LongAdder();
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

    /** The counters now, with the number of retirements still waiting for their evidence. */
    public ContextCounters snapshot(long pendingRetirements) {
        return new ContextCounters(syncAllocations.sum(), asyncAllocations.sum(), syncFrees.sum(), asyncFrees.sum(),
                bytesLive.sum(), hostToDeviceCopies.sum(), hostToDeviceBytes.sum(), deviceToHostCopies.sum(),
                deviceToHostBytes.sum(), deviceToDeviceCopies.sum(), deviceToDeviceBytes.sum(),
                forcedSynchronizations.sum(), pendingRetirements, retirementsCompleted.sum(), retirementsFailed.sum(),
                retirementsAbandoned.sum());
    }
}
