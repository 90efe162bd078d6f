package dev.gatun.cuda;

import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * Where one context's memory is, at one moment: what the device has free, what Gatun holds by
 * kind, what each CUDA memory pool reserves and uses, the device's graph memory and, with leak
 * tracking, the largest live allocations with where they were made. An
 * {@link OutOfDeviceMemoryException} carries the one taken when the allocation finally failed;
 * {@link ContextDiagnostics#memoryReport()} takes one now. A figure Gatun could not (or, on a thread
 * capturing in global mode, would not) ask the driver for is -1.
 *
 * @param deviceFreeBytes free device memory ({@code cuMemGetInfo}), for every process on the device
 * @param deviceTotalBytes the device's total memory
 * @param devicePoolBytes bytes Gatun's device pool holds from the driver ({@link CudaContext#allocate}:
 *     in use and retained for reuse)
 * @param devicePoolRetainedBytes of those, the bytes retained in its free lists (a trim returns them)
 * @param streamOrderedBytes stream-ordered allocations not yet freed ({@link Stream#allocate} and
 *     {@link MemoryPool#allocate}, closed ones waiting for their fences included)
 * @param graphAllocationBytes allocations made inside Gatun captures and not yet retired
 * @param pinnedBytes pinned host memory ({@link CudaContext#allocatePinned}) not yet freed
 * @param growableBytes physical chunks mapped into growable buffers ({@link CudaContext#reserveGrowable})
 * @param pools each CUDA memory pool this context uses: the device's default pool and the pools it created
 * @param graphMemory the device's graph memory, as the driver counts it; null when not asked
 * @param largestAllocations the largest live allocations, largest first, with their allocation
 *     sites; empty without leak tracking ({@link ContextOptions#withLeakTracking})
 */
public record MemoryReport(long deviceFreeBytes, long deviceTotalBytes, long devicePoolBytes,
        long devicePoolRetainedBytes, long streamOrderedBytes, long graphAllocationBytes, long pinnedBytes,
        long growableBytes, List<Pool> pools, MemoryUsage graphMemory, List<Allocation> largestAllocations) {

    /** Copies the lists, so that the report does not change with them. */
    public MemoryReport {
        pools = List.copyOf(pools);
        largestAllocations = List.copyOf(largestAllocations);
    }

    /**
     * One CUDA memory pool: the driver's figures and Gatun's.
     *
     * @param pool the pool's identity, e.g. {@code MemoryPool#3 (device 0)}
     * @param reservedBytes bytes the pool reserves from the device ({@code CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT})
     * @param usedBytes bytes of it in use by allocations ({@code CU_MEMPOOL_ATTR_USED_MEM_CURRENT})
     * @param liveBytes bytes Gatun allocated from it and has not freed ({@link MemoryPool#allocate};
     *     0 for the default pool, whose {@link Stream#allocate} bytes are in {@link #streamOrderedBytes})
     * @param hardCapBytes its hard cap ({@link MemoryPoolOptions#hardCapBytes}); {@link Long#MAX_VALUE} for none
     * @param softLimitBytes its soft limit; {@link Long#MAX_VALUE} for none
     */
    public record Pool(String pool, long reservedBytes, long usedBytes, long liveBytes, long hardCapBytes,
            long softLimitBytes) {
    }

    /**
     * A live allocation and where it was made.
     *
     * @param owner the owner's identity, e.g. {@code DeviceBuffer#12 (1073741824 bytes at 0x7f0000000000, device 0)}
     * @param byteSize its size (mapped bytes, for a growable buffer)
     * @param caller the first frame of its allocation site outside Gatun
     * @param site the whole stack where it was allocated
     */
    public record Allocation(String owner, long byteSize, StackTraceElement caller, List<StackTraceElement> site) {

        /**
         * Copies the site, so that the record does not change with it.
         *
         * @throws NullPointerException when {@code owner} is null
         */
        public Allocation {
            Objects.requireNonNull(owner, "owner");
            site = List.copyOf(site);
        }
    }

    /** The report as lines of text, as an out-of-memory exception's message shows it. */
    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("memory report:");
        sb.append("\n  device: ").append(mib(deviceFreeBytes)).append(" free of ").append(mib(deviceTotalBytes));
        sb.append("\n  Gatun's live memory: device pool ").append(mib(devicePoolBytes)).append(" (")
                .append(mib(devicePoolRetainedBytes)).append(" retained), stream-ordered ")
                .append(mib(streamOrderedBytes)).append(", graph allocations ").append(mib(graphAllocationBytes))
                .append(", growable ").append(mib(growableBytes)).append(", pinned host ").append(mib(pinnedBytes));
        for (Pool p : pools) {
            sb.append("\n  ").append(p.pool).append(": reserved ").append(mib(p.reservedBytes)).append(", used ")
                    .append(mib(p.usedBytes)).append(", Gatun's live ").append(mib(p.liveBytes))
                    .append(p.hardCapBytes == Long.MAX_VALUE ? "" : ", hard cap " + mib(p.hardCapBytes))
                    .append(p.softLimitBytes == Long.MAX_VALUE ? "" : ", soft limit " + mib(p.softLimitBytes));
        }
        if (graphMemory != null) {
            sb.append("\n  graph memory: used ").append(mib(graphMemory.usedBytes())).append(", reserved ")
                    .append(mib(graphMemory.reservedBytes()));
        }
        if (largestAllocations.isEmpty()) {
            sb.append("\n  largest allocations: not tracked (open the context with "
                    + "ContextOptions.withLeakTracking(true) or -Dgatun.leakTracking=true to list them with their sites)");
        }
        for (Allocation a : largestAllocations) {
            sb.append("\n  ").append(mib(a.byteSize)).append(": ").append(a.owner).append(", allocated at ")
                    .append(a.caller);
        }
        return sb.toString();
    }

    /** Bytes as MiB with one decimal, or "unknown" for -1. */
    private static String mib(long bytes) {
        return bytes < 0 ? "unknown" : String.format(Locale.ROOT, "%.1f MiB", bytes / 1048576.0);
    }
}
