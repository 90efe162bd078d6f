package dev.gatun.cuda.gpu;

import dev.gatun.cuda.ContextCounters;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DevicePoolCounters;
import dev.gatun.cuda.GraphAllocationCounters;
import dev.gatun.cuda.MemoryReport;
import dev.gatun.cuda.OwnerKind;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Whether a context is back where it was across a run that closed everything it allocated and
 * then synchronized: every counter that must return did (live owners of each kind, device bytes
 * live, retirements pending, graph allocations live, completions pending, the memory report's
 * stream-ordered, pinned and growable bytes, ...), and the cumulative ones add up: every
 * allocation is matched by a free, except the blocks the device pool keeps for reuse (a closed
 * pooled buffer returns its block to the pool, not to the driver), which are not live bytes.
 */
final class CounterBalance {

    private CounterBalance() {
    }

    /**
     * A context's counters at one moment.
     *
     * @param figures the figures that must return, by name (live owners of each kind but the
     *     context's own pinned staging, which grows on demand; graph allocations; completions;
     *     host-callback failures; memory report bytes)
     */
    record Snapshot(ContextCounters counters, DevicePoolCounters pool, Map<String, Long> figures) {

        Snapshot {
            figures = Collections.unmodifiableMap(new LinkedHashMap<>(figures)); // in the order they were taken
        }

        static Snapshot of(CudaContext ctx) {
            Map<String, Long> f = new LinkedHashMap<>();
            liveOwners(ctx).forEach((kind, n) -> f.put("live owners " + kind, n));
            GraphAllocationCounters graph = ctx.diagnostics().graphAllocationCounters();
            f.put("graph allocations live", graph.liveAllocations());
            f.put("graph allocation bytes live", graph.liveBytes());
            f.put("completions pending", ctx.diagnostics().pendingCompletions());
            f.put("host callback failures", ctx.diagnostics().hostCallbackFailureCount());
            MemoryReport report = ctx.diagnostics().memoryReport();
            f.put("memory report: stream-ordered bytes", report.streamOrderedBytes());
            f.put("memory report: pinned bytes", report.pinnedBytes());
            f.put("memory report: growable bytes mapped", report.growableBytes());
            return new Snapshot(ctx.diagnostics().counters(), ctx.diagnostics().devicePool().counters(), f);
        }
    }

    /**
     * The ways the counters fail to add up or to return between the two snapshots; empty when they balance.
     *
     * @param streamOrderedAllocations how many stream-ordered allocations the run itself made
     */
    static List<String> violations(Snapshot before, Snapshot after, long streamOrderedAllocations) {
        List<String> wrong = new ArrayList<>();
        ContextCounters b = before.counters();
        ContextCounters a = after.counters();
        long asyncAllocations = a.asyncAllocations() - b.asyncAllocations();
        long asyncFrees = a.asyncFrees() - b.asyncFrees();
        long syncAllocations = a.syncAllocations() - b.syncAllocations();
        long syncFrees = a.syncFrees() - b.syncFrees();
        long retainedBlocks = after.pool().retainedBlocks() - before.pool().retainedBlocks();
        long retainedBytes = after.pool().retainedBytes() - before.pool().retainedBytes();
        long poolAllocations = after.pool().allocations() - before.pool().allocations();
        long poolFrees = after.pool().frees() - before.pool().frees();
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
        if (a.liveBytes() != b.liveBytes()) {
            wrong.add("device bytes live changed by " + (a.liveBytes() - b.liveBytes()) + " (the pool retains "
                    + retainedBytes + " bytes more, which are not live)");
        }
        if (a.devicePoolRetainedBytes() - b.devicePoolRetainedBytes() != retainedBytes) {
            wrong.add("the context's count of the pool's retained bytes changed by "
                    + (a.devicePoolRetainedBytes() - b.devicePoolRetainedBytes()) + ", the pool's own by " + retainedBytes);
        }
        if (a.pendingRetirements() != 0) {
            wrong.add(a.pendingRetirements() + " retirements still pending after synchronize");
        }
        if (a.failedRetirements() != b.failedRetirements()) {
            wrong.add((a.failedRetirements() - b.failedRetirements()) + " retirements failed");
        }
        if (a.abandonedRetirements() != b.abandonedRetirements()) {
            wrong.add((a.abandonedRetirements() - b.abandonedRetirements()) + " retirements abandoned");
        }
        before.figures().forEach((name, was) -> {
            long now = after.figures().get(name);
            if (now != was) {
                wrong.add(name + ": " + was + " before the run, " + now + " after");
            }
        });
        return wrong;
    }

    /** Live owners of every kind but STAGING (the context's own pinned staging, which grows on demand). */
    private static Map<OwnerKind, Long> liveOwners(CudaContext ctx) {
        Map<OwnerKind, Long> live = new EnumMap<>(OwnerKind.class);
        for (OwnerKind kind : OwnerKind.values()) {
            if (kind != OwnerKind.STAGING) {
                live.put(kind, ctx.diagnostics().liveOwners(kind));
            }
        }
        return live;
    }
}
