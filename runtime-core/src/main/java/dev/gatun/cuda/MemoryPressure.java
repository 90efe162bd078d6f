package dev.gatun.cuda;

import dev.gatun.cuda.internal.memory.OutOfMemoryLadder;

/**
 * A context's view of memory pressure ({@link CudaContext#memoryPressure()}): what its
 * out-of-memory ladder did, and a report of where its memory is now. It owns nothing.
 *
 * <p>When an allocation of any kind runs out of memory ({@code CUDA_ERROR_OUT_OF_MEMORY}, or a
 * pool's hard cap), it climbs the ladder before failing: (1) the retirements that are due run,
 * after waiting for the fences of closed owners that hold memory; (2) Gatun's device pool, the
 * CUDA memory pools (down to their release thresholds) and the device's graph memory are
 * trimmed; (3) the context is synchronized. After a rung that gave memory back, and always after
 * the last, the allocation is tried again; if the last try fails too, it throws an
 * {@link OutOfDeviceMemoryException} carrying a {@link MemoryReport}. Switch the ladder off with
 * {@link ContextOptions#withOutOfMemoryLadder} or {@value ContextOptions#OUT_OF_MEMORY_LADDER_PROPERTY}.
 */
public final class MemoryPressure {

    private final CudaContext context;
    private final OutOfMemoryLadder ladder;

    MemoryPressure(CudaContext context, OutOfMemoryLadder ladder) {
        this.context = context;
        this.ladder = ladder;
    }

    /** {@return whether allocations of this context climb the out-of-memory ladder} */
    public boolean ladderEnabled() {
        return ladder.enabled();
    }

    /** {@return what the ladder did so far} Readable after the context closed. */
    public OutOfMemoryCounters counters() {
        return ladder.counters();
    }

    /**
     * {@return where the context's memory is now: the device's free and total memory, Gatun's live bytes by
     * kind, each memory pool's reserved and used bytes, the device's graph memory and, with leak
     * tracking, the largest live allocations and their sites} Makes driver calls (a few per pool).
     */
    public MemoryReport report() {
        context.checkOpen();
        return ladder.report();
    }

    @Override
    public String toString() {
        return "MemoryPressure[" + context + ", " + counters() + "]";
    }
}
