package dev.gatun.cuda.gpu;

import dev.gatun.cuda.CaptureArena;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.ModuleImage;
import dev.gatun.cuda.graph.CudaGraphs;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;

/** What the stress workers share: the context, kernels, graphs and capture arena, and the tallies they report into. */
final class StressShared implements AutoCloseable {

    /** Mismatch descriptions kept for the failure message; the count goes on past them. */
    private static final int KEPT_MISMATCHES = 20;

    final CudaContext ctx;
    final Kernel affine;
    final Kernel gather;
    /** Two images of {@link StressKernels#VERSION}: VERSION=1 and VERSION=2. */
    final ModuleImage[] versions;
    final CudaGraphs graphs;
    /** One capture arena every worker captures a graph into: their replays share its memory, on any stream. */
    final CaptureArena arena;
    /** The validation latch opens one generation at a time: workers take turns. */
    final ReentrantLock latchTurn = new ReentrantLock();

    private final EnumMap<StressOperation, LongAdder> counts = new EnumMap<>(StressOperation.class);
    private final LongAdder mismatches = new LongAdder();
    private final ConcurrentLinkedQueue<String> firstMismatches = new ConcurrentLinkedQueue<>();
    private final LongAdder streamOrderedAllocations = new LongAdder();

    StressShared(CudaContext ctx, Kernel affine, Kernel gather, ModuleImage[] versions, CudaGraphs graphs,
            CaptureArena arena) {
        this.ctx = ctx;
        this.affine = affine;
        this.gather = gather;
        this.versions = versions;
        this.graphs = graphs;
        this.arena = arena;
        for (StressOperation op : StressOperation.values()) {
            counts.put(op, new LongAdder());
        }
    }

    void ran(StressOperation op) {
        counts.get(op).increment();
    }

    void mismatch(String description) {
        mismatches.increment();
        if (firstMismatches.size() < KEPT_MISMATCHES) {
            firstMismatches.add(description);
        }
    }

    void streamOrderedAllocations(int n) {
        streamOrderedAllocations.add(n);
    }

    EnumMap<StressOperation, Long> counts() {
        EnumMap<StressOperation, Long> snapshot = new EnumMap<>(StressOperation.class);
        counts.forEach((op, n) -> snapshot.put(op, n.sum()));
        return snapshot;
    }

    long mismatches() {
        return mismatches.sum();
    }

    List<String> firstMismatches() {
        return new ArrayList<>(firstMismatches);
    }

    long streamOrderedAllocations() {
        return streamOrderedAllocations.sum();
    }

    /** Closes the kernels and the arena (whose memory goes once the workers' graphs of it are gone). */
    @Override
    public void close() {
        affine.close();
        gather.close();
        arena.close();
    }
}
