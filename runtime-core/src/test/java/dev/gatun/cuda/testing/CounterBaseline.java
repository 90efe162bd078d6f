package dev.gatun.cuda.testing;

import dev.gatun.cuda.ContextCounters;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DevicePoolCounters;
import dev.gatun.cuda.GraphAllocationCounters;
import dev.gatun.cuda.MemoryReport;
import dev.gatun.cuda.OwnerKind;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Every figure of a context that must be back where it was once a run has closed everything it
 * made and its work has completed: live owners of each kind (but the context's pinned staging,
 * which grows on demand), device bytes live, the device pool's blocks handed out, stream-ordered
 * allocations not freed, retirements pending, failed or abandoned, graph allocations live,
 * completions pending, host-callback failures, and the memory report's stream-ordered, pinned and
 * growable bytes. Take one before the run and compare after {@code synchronize()}.
 */
public record CounterBaseline(Map<String, Long> figures) {

    public CounterBaseline {
        figures = Collections.unmodifiableMap(new LinkedHashMap<>(figures)); // in the order they were taken
    }

    /** The figures of {@code ctx} now. */
    public static CounterBaseline of(CudaContext ctx) {
        Map<String, Long> f = new LinkedHashMap<>();
        for (OwnerKind kind : OwnerKind.values()) {
            if (kind != OwnerKind.STAGING) {
                f.put("live owners " + kind, ctx.diagnostics().liveOwners(kind));
            }
        }
        ContextCounters c = ctx.diagnostics().counters();
        DevicePoolCounters pool = ctx.diagnostics().devicePool().counters();
        f.put("device bytes live (counters().liveBytes())", c.liveBytes());
        f.put("device pool bytes retained, the context's count less the pool's own",
                c.devicePoolRetainedBytes() - pool.retainedBytes());
        f.put("device pool blocks handed out (driver allocations - frees - retained blocks)",
                c.syncAllocations() - c.syncFrees() - pool.retainedBlocks());
        f.put("stream-ordered allocations not freed (asyncAllocations - asyncFrees)",
                c.asyncAllocations() - c.asyncFrees());
        f.put("retirements pending", c.pendingRetirements());
        f.put("retirements failed", c.failedRetirements());
        f.put("retirements abandoned", c.abandonedRetirements());
        GraphAllocationCounters graph = ctx.diagnostics().graphAllocationCounters();
        f.put("graph allocations live", graph.liveAllocations());
        f.put("graph allocation bytes live", graph.liveBytes());
        f.put("completions pending", ctx.diagnostics().pendingCompletions());
        f.put("host callback failures", ctx.diagnostics().hostCallbackFailureCount());
        MemoryReport report = ctx.diagnostics().memoryReport();
        f.put("memory report: stream-ordered bytes", report.streamOrderedBytes());
        f.put("memory report: pinned bytes", report.pinnedBytes());
        f.put("memory report: growable bytes mapped", report.growableBytes());
        return new CounterBaseline(f);
    }

    /** Each figure of {@code after} that differs from this baseline, named with both values; empty when none does. */
    public List<String> departures(CounterBaseline after) {
        List<String> wrong = new ArrayList<>();
        figures.forEach((name, was) -> {
            long now = after.figures.get(name);
            if (now != was) {
                wrong.add(name + ": " + was + " before the run, " + now + " after");
            }
        });
        return wrong;
    }
}
