package dev.gatun.cuda.internal.memory;

import dev.gatun.cuda.MemoryUsage;
import dev.gatun.cuda.MemoryInfo;
import dev.gatun.cuda.MemoryReport;
import dev.gatun.cuda.internal.context.ContextState;
import dev.gatun.cuda.internal.context.ContextStats;
import dev.gatun.cuda.internal.context.NativeResource;
import dev.gatun.cuda.internal.pool.CallSites;
import dev.gatun.cuda.internal.pool.DevicePool;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * Takes a context's {@link MemoryReport}. Gatun's own figures are its counters; the driver's
 * (free device memory, each pool's reserved and used bytes, graph memory) are asked for only when
 * the caller may make driver calls, and a query that fails leaves its figure unknown: a report
 * never replaces the error it describes.
 */
final class MemoryReports {

    /** How many of the largest live allocations a report lists. */
    static final int LARGEST = 5;

    private final ContextState context;
    private final DevicePool devicePool;
    private final PoolRegistry pools;

    MemoryReports(ContextState context, DevicePool devicePool, PoolRegistry pools) {
        this.context = context;
        this.devicePool = devicePool;
        this.pools = pools;
    }

    /** A report now; {@code askDriver} false leaves the driver's figures unknown (-1, or null). */
    MemoryReport take(boolean askDriver) {
        ContextStats stats = context.stats();
        long devicePoolBytes = devicePool.footprint();
        MemoryInfo device = askDriver ? deviceMemory() : null;
        List<MemoryReport.Pool> poolLines = new ArrayList<>();
        for (PoolMemory pool : pools.pools()) {
            poolLines.add(pool.report(askDriver));
        }
        return new MemoryReport(device == null ? -1 : device.freeBytes(), device == null ? -1 : device.totalBytes(),
                devicePoolBytes, devicePool.counters().retainedBytes(),
                stats.streamOrderedBytesLive(),
                stats.graphAllocationBytesLive.sum(), stats.pinnedBytesLive.sum(), stats.growableBytesMapped.sum(),
                poolLines, askDriver ? graphMemory() : null, largest());
    }

    private MemoryInfo deviceMemory() {
        try {
            return context.calls().memory().info();
        } catch (RuntimeException unreadable) {
            return null;
        }
    }

    private MemoryUsage graphMemory() {
        try {
            return context.calls().graphMemory().usage();
        } catch (RuntimeException unreadable) {
            return null;
        }
    }

    /** With leak tracking, the largest live allocations, largest first, with their allocation sites; else none. */
    private List<MemoryReport.Allocation> largest() {
        if (!context.leakTracking()) {
            return List.of();
        }
        return context.liveResources().stream()
                .filter(r -> bytesOf(r) > 0)
                .sorted(Comparator.comparingLong(MemoryReports::bytesOf).reversed())
                .limit(LARGEST)
                .map(MemoryReports::line)
                .toList();
    }

    private static MemoryReport.Allocation line(NativeResource r) {
        StackTraceElement[] site = r.allocationSite().getStackTrace();
        return new MemoryReport.Allocation(r.identity(), bytesOf(r), CallSites.callerIn(site), List.of(site));
    }

    /** The memory an owner allocated itself (a view or a borrowed range counts nothing). */
    private static long bytesOf(NativeResource r) {
        return switch (r) {
            case PooledBlock b -> b.size();
            case StreamOrdered s -> s.size();
            case GraphAllocation g -> g.size();
            case PinnedMemory p -> p.size();
            case VmmReservation v -> v.counters().mappedBytes();
            default -> 0;
        };
    }
}
