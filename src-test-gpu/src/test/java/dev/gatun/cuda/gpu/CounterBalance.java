package dev.gatun.cuda.gpu;

import dev.gatun.cuda.ContextCounters;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DevicePoolCounters;
import dev.gatun.cuda.OwnerKind;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * Whether a context's counters add up across a run that closed everything it allocated and then
 * synchronized: every allocation is matched by a free, except the blocks the device pool keeps
 * for reuse (a closed pooled buffer returns its block to the pool, not to the driver); and its
 * live owners, counted per kind.
 */
final class CounterBalance {

    private CounterBalance() {
    }

    /**
     * The ways the counters fail to add up between the two snapshots; empty when they balance.
     *
     * @param streamOrderedAllocations how many stream-ordered allocations the run itself made
     */
    static List<String> violations(ContextCounters before, ContextCounters after, DevicePoolCounters poolBefore,
            DevicePoolCounters poolAfter, long streamOrderedAllocations) {
        List<String> wrong = new ArrayList<>();
        long asyncAllocations = after.asyncAllocations() - before.asyncAllocations();
        long asyncFrees = after.asyncFrees() - before.asyncFrees();
        long syncAllocations = after.syncAllocations() - before.syncAllocations();
        long syncFrees = after.syncFrees() - before.syncFrees();
        long retainedBlocks = poolAfter.retainedBlocks() - poolBefore.retainedBlocks();
        long retainedBytes = poolAfter.retainedBytes() - poolBefore.retainedBytes();
        long poolAllocations = poolAfter.allocations() - poolBefore.allocations();
        long poolFrees = poolAfter.frees() - poolBefore.frees();
        long bytesLive = after.bytesLive() - before.bytesLive();
        if (asyncAllocations != streamOrderedAllocations) {
            wrong.add("the context counted " + asyncAllocations + " stream-ordered allocations, the run made "
                    + streamOrderedAllocations);
        }
        if (asyncAllocations != asyncFrees) {
            wrong.add(asyncAllocations + " stream-ordered allocations but " + asyncFrees + " stream-ordered frees");
        }
        if (syncAllocations != syncFrees + retainedBlocks) {
            wrong.add(syncAllocations + " driver allocations != " + syncFrees + " driver frees + " + retainedBlocks
                    + " blocks the pool now retains more than before");
        }
        if (poolAllocations != poolFrees + retainedBlocks) {
            wrong.add("the pool made " + poolAllocations + " allocations != its " + poolFrees + " frees + "
                    + retainedBlocks + " more retained blocks");
        }
        if (bytesLive != retainedBytes) {
            wrong.add("device bytes live changed by " + bytesLive + ", the bytes the pool retains by " + retainedBytes);
        }
        if (after.retirementsPending() != 0) {
            wrong.add(after.retirementsPending() + " retirements still pending after synchronize");
        }
        if (after.retirementsFailed() != before.retirementsFailed()) {
            wrong.add((after.retirementsFailed() - before.retirementsFailed()) + " retirements failed");
        }
        if (after.retirementsAbandoned() != before.retirementsAbandoned()) {
            wrong.add((after.retirementsAbandoned() - before.retirementsAbandoned()) + " retirements abandoned");
        }
        return wrong;
    }

    /** Live owners of every kind but STAGING (the context's own pinned staging, which grows on demand). */
    static Map<OwnerKind, Long> liveOwners(CudaContext ctx) {
        Map<OwnerKind, Long> live = new EnumMap<>(OwnerKind.class);
        for (OwnerKind kind : OwnerKind.values()) {
            if (kind != OwnerKind.STAGING) {
                live.put(kind, ctx.liveOwners(kind));
            }
        }
        return live;
    }
}
