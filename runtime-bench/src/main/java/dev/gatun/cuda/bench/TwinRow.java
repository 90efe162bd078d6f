package dev.gatun.cuda.bench;

import dev.gatun.cuda.ContextOptions;
import dev.gatun.cuda.DevicePoolOptions;
import java.util.Optional;

/**
 * The rows of the C comparison (issue 11): one operation each, measured the same way by the
 * Java twin ({@link Twin}), the C twin ({@code src/c/twins.c}, which knows the same ids) and
 * one JMH benchmark (for B/op under {@code -prof gc}).
 *
 * <p>{@link #n} is the number of timed operations of one run, chosen so that a run takes about
 * a second or less on an H200 and the whole comparison fits in one device call; the compare
 * script passes it to both twins, so they always run the same N. The rows of sub-microsecond
 * operations (event record, pool hits, stream-ordered allocation) take N in the millions: with
 * a warm-up of N/2 lasting only tens of milliseconds, the JIT was still compiling the Java
 * twin's path during the timed part, and their ratios spread from 0.7 to 2.3 within one run.
 */
public enum TwinRow {

    LAUNCH_EMPTY("launch_empty", "empty launch", 100_000, true,
            new Goal.RatioAtMost(1.05), 0, "LaunchBenchmark.launchEmptyKernel"),
    LAUNCH_FOUR_PREPARED("launch_four_prepared", "4-argument launch, arguments prepared once", 100_000, true,
            new Goal.RatioAtMost(1.05), 0, "LaunchBenchmark.launchFourArgumentKernelPrepared"),
    LAUNCH_FOUR_SETTERS("launch_four_setters", "4-argument launch, all four set by setters per call", 100_000, true,
            new Goal.RatioAtMost(1.05), 0, "LaunchBenchmark.launchFourArgumentKernelAllSetters"),
    LAUNCH_SYNC("launch_sync", "launch + stream sync round trip", 50_000, true,
            new Goal.RatioAtMost(1.05), 0, "LaunchBenchmark.launchAndSynchronize"),
    REPLAY_1("replay_1", "graph replay, 1 kernel", 100_000, true,
            new Goal.RatioAtMost(1.05), 0, "GraphReplayBenchmark.replayGraph:kernels=1"),
    REPLAY_10("replay_10", "graph replay, 10 kernels (GPU-bound)", 20_000, true,
            Goal.None.INSTANCE, 0, "GraphReplayBenchmark.replayGraph:kernels=10"),
    EVENT_RECORD_QUERY("event_record_query", "event record + query", 2_000_000, true,
            new Goal.RatioAtMost(1.05), 0, "LaunchBenchmark.recordAndQueryEvent"),
    UPLOAD("upload_256m", "pinned upload 256 MiB", 100, true,
            new Goal.BandwidthAtLeast(0.98), 0, "TransferBenchmark.uploadPinned"),
    DOWNLOAD("download_256m", "pinned download 256 MiB", 100, true,
            new Goal.BandwidthAtLeast(0.98), 0, "TransferBenchmark.downloadPinned"),
    READBACK("readback_4b", "4-byte synchronous readback into an int[]", 50_000, true,
            new Goal.RatioAtMost(1.05), 0, "CopyBenchmark.readBackFourBytes"),
    ALLOC_POOLED("alloc_pooled", "1 MiB allocate + close, pooled (pool hit), vs cuMemAlloc + cuMemFree", 1_000_000, true,
            new Goal.RatioAtMost(0.5), TwinRow.ALLOCATION_HANDLE_BYTES, "MemoryBenchmark.allocateAndClose:pool=pooled"),
    ALLOC_UNPOOLED("alloc_unpooled", "1 MiB allocate + close, pool off, vs cuMemAlloc + cuMemFree", 200_000, true,
            new Goal.RatioAtMost(1.10), TwinRow.ALLOCATION_HANDLE_BYTES, "MemoryBenchmark.allocateAndClose:pool=unpooled"),
    ALLOC_STREAM_ORDERED("alloc_stream_ordered", "1 MiB stream-ordered allocate + free", 1_000_000, true,
            new Goal.RatioAtMost(1.10), TwinRow.ALLOCATION_HANDLE_BYTES, "MemoryBenchmark.allocateInStreamOrderAndClose"),
    ALLOC_FROM_POOL("alloc_from_pool", "1 MiB allocate from a created CUDA memory pool + free (stream-ordered)", 1_000_000,
            true, new Goal.RatioAtMost(1.10), TwinRow.ALLOCATION_HANDLE_BYTES, "MemoryBenchmark.allocateFromPoolAndClose"),
    PREPARE_FOUR("prepare_four", "prepare() of a 4-argument launch", 20_000, false,
            new Goal.MicrosAtMost(2.0), TwinRow.NO_BYTES_GOAL, "LaunchBenchmark.prepareFourArgumentLaunch"),
    ISSUE_LAUNCH("issue_launch", "host issue cost: empty launch (batches of 64, no sync timed)", 64_000, true,
            new Goal.ExtraNanosAtMost(50), TwinRow.NO_BYTES_GOAL, "IssueCostBenchmark.launch"),
    ISSUE_REPLAY("issue_replay", "host issue cost: graph replay, 1 kernel (batches of 64)", 64_000, true,
            new Goal.ExtraNanosAtMost(50), TwinRow.NO_BYTES_GOAL, "IssueCostBenchmark.replay"),
    ISSUE_EVENT_RECORD("issue_event_record", "host issue cost: event record (batches of 64)", 640_000, true,
            new Goal.ExtraNanosAtMost(50), TwinRow.NO_BYTES_GOAL, "IssueCostBenchmark.recordEvent"),
    /**
     * Issue 24: a stream write of a {@code MappedWord} ({@code cuStreamWriteValue32}, default
     * flags) until the host's acquire reads see it; the goal is absolute (within 2 µs of the
     * write), and C does the same write and spin. Read it beside {@link #READBACK}, the
     * synchronous 4-byte readback it replaces for a flag.
     */
    MAPPED_WORD_SEEN("mapped_word_seen", "stream write of a mapped word until the host sees it (acquire spin)", 50_000,
            true, new Goal.MicrosAtMost(2.0), 0, "MappedWordBenchmark.writeUntilSeen"),
    /**
     * Issue 24's goal as stated, the GPU's write seen by the host within 2 µs: a persistent
     * ping-pong between the host and one GPU thread (twins.cu's {@code pingpong}) over two mapped
     * words. One operation is one round trip: the host's release write of ping = i (no driver
     * call), which the GPU thread sees, then its write of pong = i, which the host's acquire
     * reads see. A round trip of at most 2 µs bounds the GPU-to-host half by 2 µs; unlike
     * {@link #MAPPED_WORD_SEEN}, no driver call that queues the write is inside the time.
     */
    MAPPED_WORD_ROUND_TRIP("mapped_word_round_trip",
            "host-GPU ping-pong over two mapped words, one round trip (a persistent 1-thread kernel)", 100_000, true,
            new Goal.MicrosAtMost(2.0), 0, "MappedWordRoundTripBenchmark.roundTrip"),
    COPY_EACH_H2D("copy_each_h2d_64x4k", "64 × 4 KiB pinned host-to-device, one cuMemcpyAsync each", 4_000, true,
            new Goal.RatioAtMost(1.10), 0, "BatchCopyBenchmark.copies:path=upload_one_at_a_time"),
    COPY_BATCH_H2D("copy_batch_h2d_64x4k", "64 × 4 KiB pinned host-to-device, one cuMemcpyBatchAsync", 4_000, true,
            new Goal.RowRatioAtMost("copy_each_h2d_64x4k", 0.67), 0, "BatchCopyBenchmark.copies:path=upload_batched"),
    COPY_EACH_D2H("copy_each_d2h_64x4k", "64 × 4 KiB device-to-pinned-host, one cuMemcpyAsync each", 4_000, true,
            new Goal.RatioAtMost(1.10), 0, "BatchCopyBenchmark.copies:path=download_one_at_a_time"),
    COPY_BATCH_D2H("copy_batch_d2h_64x4k", "64 × 4 KiB device-to-pinned-host, one cuMemcpyBatchAsync", 4_000, true,
            new Goal.RowRatioAtMost("copy_each_d2h_64x4k", 0.67), 0, "BatchCopyBenchmark.copies:path=download_batched"),
    /**
     * Issue 38's host-overhead row, through cuBLASLt: a warm {@code Matmul.run} of a 64×64×64 fp16
     * GEMM (fp16 out, fp32 accumulation; gatun-blas) / one {@code cublasLtMatmul} with the
     * descriptors, layouts, workspace and algorithm made once. Timed as the host-issue rows are,
     * in batches of {@link #BATCH} into an idle stream: a GEMM this small may run on the GPU about
     * as long as the host takes to issue it, and a loop drained only at its end would then time
     * the GPU, not the host. Needs cuBLASLt and cuBLAS 13; where either is missing, both twins
     * report the row not run ({@code SKIP}) instead of failing.
     */
    GEMM_LT_64("gemm_lt_64", "64×64×64 fp16 cuBLASLt matmul, host issue cost (batches of 64)", 128_000, true,
            new Goal.RatioAtMost(1.05), 0, "GemmBenchmark.cublasLtMatmul"),
    /** The same GEMM through cuBLAS: a warm {@code Gemm.run} / one {@code cublasGemmEx} (handle bound to the stream and workspace once). */
    GEMM_64("gemm_64", "64×64×64 fp16 cuBLAS cublasGemmEx, host issue cost (batches of 64)", 128_000, true,
            new Goal.RatioAtMost(1.05), 0, "GemmBenchmark.cublasGemm");

    /** {@link #bytesGoal()} of a row without a B/op goal. */
    public static final int NO_BYTES_GOAL = -1;

    /** The allocation rows' B/op goal: the one 16-byte object an allocate + close makes, its {@code DeviceBuffer}. */
    public static final int ALLOCATION_HANDLE_BYTES = 16;

    /** Bytes of one pinned transfer (the upload and download rows). */
    public static final long TRANSFER_BYTES = 256L << 20;

    /** Bytes of one allocation (the allocation rows). */
    public static final long ALLOCATION_BYTES = 1L << 20;

    /**
     * Operations per timed batch of the host-issue rows: well below the launch queue's depth
     * (about a thousand launches), so no operation in a batch waits for the GPU.
     */
    public static final int BATCH = 64;

    /** Copies in one operation of the batched-copy rows (issue 24). */
    public static final int COPIES = 64;

    /** Bytes of each of those copies. */
    public static final int COPY_BYTES = 4096;

    /** Pinned buffers the batched-copy rows take in turn (once so that a buffer's host wait for its last fence rarely waited; no batch waits since issue 36 §3). */
    public static final int COPY_BUFFERS = 4;

    /** Elements of the 4-argument kernel's buffers, and its block size. */
    public static final int FOUR_ELEMENTS = 256;

    /** m, n and k of the GEMM rows' GEMM (fp16 A, B and D, column-major, packed). */
    public static final int GEMM_SIZE = 64;

    private final String id;
    private final String title;
    private final int n;
    private final boolean hasC;
    private final Goal goal;
    private final int bytesGoal;
    private final String jmh;

    TwinRow(String id, String title, int n, boolean hasC, Goal goal, int bytesGoal, String jmh) {
        this.id = id;
        this.title = title;
        this.n = n;
        this.hasC = hasC;
        this.goal = goal;
        this.bytesGoal = bytesGoal;
        this.jmh = jmh;
    }

    /** The id both twins take as their first argument and print in their result line. */
    public String id() {
        return id;
    }

    public String title() {
        return title;
    }

    /** Timed operations per run (the warm-up runs {@code n / 2} more). */
    public int n() {
        return n;
    }

    /** Whether {@code twins.c} has this row; {@code prepare()} has no C counterpart. */
    public boolean hasC() {
        return hasC;
    }

    public Goal goal() {
        return goal;
    }

    /**
     * The most bytes an operation may allocate on the Java heap, or {@link #NO_BYTES_GOAL}: 0 for
     * every row with a ratio goal (issue 11), except the allocation rows, whose operation makes
     * its handle ({@link #ALLOCATION_HANDLE_BYTES}; issue 22).
     */
    public int bytesGoal() {
        return bytesGoal;
    }

    /**
     * The JMH benchmark that measures the same operation: {@code Class.method}, then
     * {@code :name=value} when it takes a parameter.
     */
    public String jmh() {
        return jmh;
    }

    /** Whether the row is a host-issue row: batches of {@link #BATCH} timed without a sync inside. */
    public boolean batched() {
        return this == ISSUE_LAUNCH || this == ISSUE_REPLAY || this == ISSUE_EVENT_RECORD || needsBlas();
    }

    /** Whether the row needs cuBLASLt and cuBLAS (gatun-blas): where they are missing, it is reported as not run. */
    public boolean needsBlas() {
        return this == GEMM_LT_64 || this == GEMM_64;
    }

    /** Bytes moved per operation for the bandwidth rows; empty for the others. */
    public Optional<Long> transferBytes() {
        return this == UPLOAD || this == DOWNLOAD ? Optional.of(TRANSFER_BYTES) : Optional.empty();
    }

    /** The context options the Java twin opens device 0 with: the pool off for {@link #ALLOC_UNPOOLED}. */
    public ContextOptions contextOptions() {
        ContextOptions defaults = ContextOptions.defaults();
        return this == ALLOC_UNPOOLED ? defaults.withDevicePool(new DevicePoolOptions(0, false)) : defaults;
    }

    /**
     * The row with this id.
     *
     * @throws IllegalArgumentException when there is none
     */
    public static TwinRow byId(String id) {
        for (TwinRow row : values()) {
            if (row.id.equals(id)) {
                return row;
            }
        }
        throw new IllegalArgumentException("no benchmark row '" + id + "'; run Twin --list for the rows");
    }
}
