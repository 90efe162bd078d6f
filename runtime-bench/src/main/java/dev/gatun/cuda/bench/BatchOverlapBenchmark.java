package dev.gatun.cuda.bench;

import dev.gatun.cuda.internal.transfer.BatchOverlaps;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The host cost {@code CopyBatch.submit} adds to refuse overlapping copies (issue 34): one
 * operation is {@link BatchOverlaps#findConflict} over {@link TwinRow#COPIES} uploads of
 * {@link TwinRow#COPY_BYTES} (the batched-copy rows' shape), from consecutive ranges of a pinned
 * buffer into 64 distinct blocks of a 1,024-block device cache: in the cache's order
 * ({@code in_order}), or in a random order, as a block table hands them out
 * ({@code block_table}). No overlap, so the whole check runs. CPU only: no driver, no device; run
 * it with JMH's own main where there is no GPU ({@code java -cp gatun.jar org.openjdk.jmh.Main
 * BatchOverlapBenchmark -prof gc}), since {@code gatun bench} wants a device.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class BatchOverlapBenchmark {

    /** Where the blocks lie: in the cache's order, or in a block table's random one. */
    @Param({"in_order", "block_table"})
    public String layout;

    private static final long CACHE = 0x7f00_0000_0000L;
    private static final long PINNED = 0x7a00_0000_0000L;
    private static final int CACHE_BLOCKS = 1024;

    private BatchOverlaps overlaps;

    @Setup
    public void setUp() {
        Random random = new Random(34);
        int[] blocks = random.ints(0, CACHE_BLOCKS).distinct().limit(TwinRow.COPIES).toArray();
        if (layout.equals("in_order")) {
            Arrays.sort(blocks);
        }
        overlaps = new BatchOverlaps(TwinRow.COPIES);
        for (int k = 0; k < TwinRow.COPIES; k++) {
            overlaps.set(k, BatchOverlaps.DEVICE, CACHE + (long) blocks[k] * TwinRow.COPY_BYTES, BatchOverlaps.HOST,
                    PINNED + (long) k * TwinRow.COPY_BYTES, TwinRow.COPY_BYTES);
        }
        if (overlaps.findConflict(TwinRow.COPIES)) {
            throw new IllegalStateException("the benchmark's batch overlaps: it would measure a refusal");
        }
    }

    @Benchmark
    public boolean check() {
        return overlaps.findConflict(TwinRow.COPIES);
    }
}
