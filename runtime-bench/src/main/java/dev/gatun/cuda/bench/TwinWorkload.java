package dev.gatun.cuda.bench;

import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CopyBatch;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.DeviceView;
import dev.gatun.cuda.Event;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.KernelLaunch;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.MappedWord;
import dev.gatun.cuda.MemoryPool;
import dev.gatun.cuda.MemoryPoolOptions;
import dev.gatun.cuda.ModuleImage;
import dev.gatun.cuda.PinnedBuffer;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.WriteFlag;
import dev.gatun.cuda.blas.Blas;
import dev.gatun.cuda.blas.BlasType;
import dev.gatun.cuda.blas.Gemm;
import dev.gatun.cuda.blas.GemmSpec;
import dev.gatun.cuda.blas.Matmul;
import dev.gatun.cuda.graph.CudaGraphs;
import dev.gatun.cuda.graph.GraphSlot;
import java.util.ArrayDeque;
import java.util.Deque;

/**
 * One row's operation on Gatun, set up exactly as {@code twins.c} sets up its C twin: one
 * non-blocking stream, the kernels {@code empty} and {@code four} of the shared PTX, the
 * 4-argument kernel's buffers ({@code in} all 1.0f, {@code out} poisoned with NaN) and launches
 * prepared once, then what the row needs (a captured graph, an event, 256 MiB of pinned and
 * device memory, a device word, a mapped word, two mapped words and the ping-pong kernel
 * answering on them from a stream of its own, the batched-copy rows' buffers and batch, the GEMM
 * rows' fp16 operands, prepared GEMM and stream workspace). {@link #run(int)} is one operation;
 * {@link #verify(int)} checks, after a run of {@code n} operations, that they did what they claim.
 */
final class TwinWorkload implements AutoCloseable {

    /**
     * A library the row needs cannot be loaded here (cuBLAS, for the GEMM rows): the twin reports
     * the row not run ({@link Twin#line}) instead of failing. Only that library's refusal becomes
     * this; a missing driver stays the failure it is.
     */
    static final class LibraryMissing extends RuntimeException {
        LibraryMissing(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** One operation; {@code i} is its index in the run (the setters row derives its values from it). */
    @FunctionalInterface
    interface Op {
        void run(int i);
    }

    /** The word the readback row reads, as twins.c writes it. */
    static final int READBACK_VALUE = 0x600d;

    /** What twins.cu's {@code pingpong} writes to pong when it gave up waiting for a ping. */
    static final int GAVE_UP = -1;

    /** How long the host waits for a pong before it fails the run (the kernel waits about 4 s for a ping). */
    static final long ROUND_TRIP_PATIENCE_NANOS = 5_000_000_000L;

    /** Polls of pong between two clock reads, so that the spin reads the clock rarely (a power of two). */
    static final int POLLS_PER_CLOCK_READ = 4096;

    /** fp16 1.0: every element of the GEMM rows' A and B. */
    static final int HALF_ONE = 0x3c00;

    /** fp16 NaN: D of the GEMM rows before the first GEMM, so that an element no GEMM wrote shows. */
    static final int HALF_NAN = 0x7e00;

    /** fp16 64.0: every element of D after a GEMM of the rows (k = 64 products of 1.0, summed exactly in fp32). */
    static final int HALF_PRODUCT = 0x5400;

    private static final String MODULE = "twins";
    private static final int NAN_BITS = 0x7fc00000;

    private final Deque<AutoCloseable> owned = new ArrayDeque<>();
    private final TwinRow row;
    private final CudaContext context;
    // Set once by setUp; not final so that a failed set-up can close what it had opened.
    private Stream stream;
    private Kernel four;
    private DeviceBuffer in;
    private DeviceBuffer out;
    private KernelLaunch emptyLaunch;
    private KernelLaunch fourLaunch;
    private Op op;
    private int[] word;
    private KernelLaunch prepared;
    private MappedWord mapped;
    /** The last value the mapped-word row wrote: each operation writes the next, so none is seen early. */
    private int written;
    private BatchCopyRun copies;
    /** The GEMM rows' D. */
    private DeviceBuffer product;
    /** Operations of the whole run, warm-up included: the ping-pong kernel answers exactly that many. */
    private final int operations;

    private TwinWorkload(TwinRow row, CudaContext context, int operations) {
        this.row = row;
        this.context = context;
        this.operations = operations;
    }

    /**
     * Sets up {@code row} on {@code context}; on failure, closes what it had opened.
     *
     * @param transferBytes bytes of one pinned transfer ({@link TwinRow#TRANSFER_BYTES}; tests pass less)
     * @param operations every operation the run will make, warm-up included (the ping-pong kernel
     *     answers exactly that many pings: one fewer and the host waits in vain, one more and the
     *     kernel does)
     */
    static TwinWorkload open(TwinRow row, CudaContext context, ModuleImage kernels, long transferBytes, int operations) {
        TwinWorkload w = new TwinWorkload(row, context, operations);
        try {
            w.setUp(kernels, transferBytes);
            return w;
        } catch (RuntimeException e) {
            try {
                w.close();
            } catch (RuntimeException closing) {
                e.addSuppressed(closing);
            }
            throw e;
        }
    }

    private void setUp(ModuleImage kernels, long transferBytes) {
        stream = own(context.createStream());
        context.modules().load(MODULE, kernels, "empty", "four");
        owned.push(() -> context.modules().unload(MODULE));
        Kernel empty = own(context.modules().kernel(MODULE, "empty"));
        four = own(context.modules().kernel(MODULE, "four"));
        in = own(context.allocate(4L * TwinRow.FOUR_ELEMENTS));
        out = own(context.allocate(4L * TwinRow.FOUR_ELEMENTS));
        stream.fill(in.bytes(), Float.floatToRawIntBits(1f));
        stream.fill(out.bytes(), NAN_BITS);
        emptyLaunch = empty.prepare(LaunchConfig.of(1, 32));
        fourLaunch = four.prepare(LaunchConfig.of(1, TwinRow.FOUR_ELEMENTS), fourArguments());
        op = operation(transferBytes);
        stream.synchronize();
    }

    Stream stream() {
        return stream;
    }

    void run(int i) {
        op.run(i);
    }

    private KernelArg[] fourArguments() {
        return new KernelArg[] {KernelArg.pointer(out), KernelArg.i32(TwinRow.FOUR_ELEMENTS), KernelArg.f32(1f),
            KernelArg.pointer(in)};
    }

    private Op operation(long transferBytes) {
        // Locals, so that an operation reads no field of this object, as the C twin's reads globals.
        Stream s = stream;
        KernelLaunch empty = emptyLaunch;
        KernelLaunch launch = fourLaunch;
        return switch (row) {
            case LAUNCH_EMPTY, ISSUE_LAUNCH -> i -> empty.launch(s);
            case LAUNCH_FOUR_PREPARED -> i -> launch.launch(s);
            case LAUNCH_FOUR_SETTERS -> {
                DeviceView outView = out.asFloats();
                DeviceView inView = in.asFloats();
                yield i -> {
                    launch.setPointer(0, outView).setInt(1, 128 + (i & 127)).setFloat(2, i).setPointer(3, inView);
                    launch.launch(s);
                };
            }
            case LAUNCH_SYNC -> i -> {
                empty.launch(s);
                s.synchronize();
            };
            case REPLAY_1, ISSUE_REPLAY -> {
                GraphSlot slot = capture(1);
                yield i -> slot.replay(s);
            }
            case REPLAY_10 -> {
                GraphSlot slot = capture(10);
                yield i -> slot.replay(s);
            }
            case EVENT_RECORD_QUERY -> {
                Event event = own(context.createEvent());
                yield i -> {
                    event.record(s);
                    event.query();
                };
            }
            case ISSUE_EVENT_RECORD -> {
                Event event = own(context.createEvent());
                yield i -> event.record(s);
            }
            case UPLOAD -> {
                PinnedBuffer pinned = own(context.allocatePinned(transferBytes));
                DeviceView device = own(context.allocate(transferBytes)).bytes();
                yield i -> s.upload(device, pinned, 0);
            }
            case DOWNLOAD -> {
                PinnedBuffer pinned = own(context.allocatePinned(transferBytes));
                DeviceView device = own(context.allocate(transferBytes)).bytes();
                yield i -> s.download(pinned, 0, device);
            }
            case READBACK -> {
                DeviceView device = own(context.allocate(4)).asInts();
                s.fill(device, READBACK_VALUE);
                int[] host = new int[1];
                word = host;
                yield i -> device.copyTo(host);
            }
            case MAPPED_WORD_SEEN -> {
                MappedWord m = own(context.allocateMappedWord());
                mapped = m;
                yield i -> {
                    int v = ++written;
                    s.memOps().write32(m, v, WriteFlag.DEFAULT);
                    while (m.getInt() != v) {
                        Thread.onSpinWait();
                    }
                };
            }
            case MAPPED_WORD_ROUND_TRIP -> {
                MappedWord ping = own(context.allocateMappedWord());
                MappedWord pong = own(context.allocateMappedWord());
                mapped = pong;
                // Its own stream: the twin's syncs of `s` (after the warm-up, at the end) must not
                // wait for the kernel, which runs until the last ping.
                Stream answering = own(context.createStream());
                // Closed first (newest first): the kernel holds the words' raw addresses, which
                // Gatun does not fence, so the words are freed only after it has returned.
                owned.push(answering::synchronize);
                Kernel pingpong = own(context.modules().kernel(MODULE, "pingpong"));
                pingpong.prepare(LaunchConfig.of(1, 1), KernelArg.address(ping.deviceAddress()),
                        KernelArg.address(pong.deviceAddress()), KernelArg.i32(operations)).launch(answering);
                yield i -> {
                    int v = ++written;
                    ping.setInt(v);
                    awaitPong(pong, v);
                };
            }
            case ALLOC_POOLED, ALLOC_UNPOOLED -> i -> context.allocate(TwinRow.ALLOCATION_BYTES).close();
            case ALLOC_STREAM_ORDERED -> i -> s.allocate(TwinRow.ALLOCATION_BYTES).close();
            case ALLOC_FROM_POOL -> {
                // As twins.c: a pool that keeps what is freed (release threshold: all of it).
                MemoryPool pool = own(context.createMemoryPool(MemoryPoolOptions.defaults().withReleaseThresholdBytes(Long.MAX_VALUE)));
                yield i -> pool.allocate(s, TwinRow.ALLOCATION_BYTES).close();
            }
            case COPY_EACH_H2D, COPY_BATCH_H2D, COPY_EACH_D2H, COPY_BATCH_D2H -> {
                BatchCopyRun run = own(BatchCopyRun.open(context, s, toDevice(), submission()));
                copies = run;
                yield run::run;
            }
            case GEMM_LT_64, GEMM_64 -> gemm(s);
            case PREPARE_FOUR -> {
                Kernel kernel = four;
                LaunchConfig config = LaunchConfig.of(1, TwinRow.FOUR_ELEMENTS);
                KernelArg[] arguments = fourArguments();
                yield i -> prepared = kernel.prepare(config, arguments);
            }
        };
    }

    /**
     * The GEMM rows: D = A B of {@link TwinRow#GEMM_SIZE}³ fp16 (fp32 accumulation), A and B all
     * 1.0, D poisoned first; the context's {@link Blas} (closed with the context), the GEMM
     * prepared and the stream's workspace made here, so that the timed loop is the warm call
     * alone, as twins.c makes its handle, descriptors, algorithm and workspace before its loop.
     */
    private Op gemm(Stream s) {
        Blas blas;
        try {
            blas = Blas.of(context);
        } catch (CudaUnavailableException e) {
            throw new LibraryMissing("cuBLAS missing: " + e.getMessage().lines().findFirst().orElse(""), e);
        }
        GemmSpec spec = GemmSpec.of(TwinRow.GEMM_SIZE, TwinRow.GEMM_SIZE, TwinRow.GEMM_SIZE, BlasType.F16);
        DeviceBuffer a = own(context.allocate(spec.bytesA()));
        DeviceBuffer b = own(context.allocate(spec.bytesB()));
        product = own(context.allocate(spec.bytesD()));
        s.fill(a.bytes(), HALF_ONE << 16 | HALF_ONE);
        s.fill(b.bytes(), HALF_ONE << 16 | HALF_ONE);
        s.fill(product.bytes(), HALF_NAN << 16 | HALF_NAN);
        DeviceView va = a.as(BlasType.F16.elementType());
        DeviceView vb = b.as(BlasType.F16.elementType());
        DeviceView vd = product.as(BlasType.F16.elementType());
        blas.prepare(s);
        if (row == TwinRow.GEMM_LT_64) {
            Matmul matmul = own(blas.matmul(spec));
            return i -> matmul.run(s, va, vb, vd);
        }
        Gemm gemm = blas.gemm(spec);
        return i -> gemm.run(s, va, vb, vd);
    }

    /**
     * Spins on acquire reads until pong is {@code v}; fails when the kernel gave up, or after
     * {@link #ROUND_TRIP_PATIENCE_NANOS} without it (a kernel that never ran, a lost write).
     */
    private static void awaitPong(MappedWord pong, int v) {
        int polls = 0;
        long deadline = 0;
        int seen;
        while ((seen = pong.getInt()) != v) {
            if (seen == GAVE_UP) {
                throw new IllegalStateException("the ping-pong kernel gave up waiting for ping " + v
                        + "; the host was too slow (or stopped) between two pings: run the row again on an idle machine");
            }
            if ((++polls & (POLLS_PER_CLOCK_READ - 1)) == 0) {
                long now = System.nanoTime();
                if (polls == POLLS_PER_CLOCK_READ) {
                    deadline = now + ROUND_TRIP_PATIENCE_NANOS;
                } else if (now - deadline > 0) {
                    throw new IllegalStateException("no pong " + v + " within " + ROUND_TRIP_PATIENCE_NANOS / 1_000_000
                            + " ms (pong is " + seen + "): the ping-pong kernel is not running or its writes do not reach"
                            + " the host; check that no other process holds the GPU");
                }
            }
            Thread.onSpinWait();
        }
    }

    private boolean toDevice() {
        return row == TwinRow.COPY_EACH_H2D || row == TwinRow.COPY_BATCH_H2D;
    }

    private CopyBatch.Submission submission() {
        return row == TwinRow.COPY_BATCH_H2D || row == TwinRow.COPY_BATCH_D2H ? CopyBatch.Submission.BATCHED
                : CopyBatch.Submission.ONE_AT_A_TIME;
    }

    /** A graph of {@code kernels} empty launches, captured thread-locally as twins.c captures its own. */
    private GraphSlot capture(int kernels) {
        CudaGraphs graphs = own(CudaGraphs.create(context));
        GraphSlot slot = graphs.registerGroup("twin").slot("replay");
        slot.beginCapture(stream, CaptureMode.THREAD_LOCAL);
        for (int k = 0; k < kernels; k++) {
            emptyLaunch.launch(stream);
        }
        slot.endCapture();
        return slot;
    }

    /**
     * Checks, after the last of {@code n} operations (indices 0 to n - 1) and a stream sync,
     * that they did what the row claims.
     *
     * @throws IllegalStateException when they did not
     */
    void verify(int n) {
        switch (row) {
            case LAUNCH_FOUR_PREPARED -> expectFirstOutput(1f);
            case LAUNCH_FOUR_SETTERS -> expectFirstOutput(n - 1); // a = i of the last launch, in[0] = 1
            case READBACK -> {
                if (word[0] != READBACK_VALUE) {
                    throw new IllegalStateException("the readback read " + word[0] + ", not " + READBACK_VALUE);
                }
            }
            case MAPPED_WORD_SEEN -> {
                if (written != n + n / 2 || mapped.getInt() != written) {
                    throw new IllegalStateException("the host saw " + mapped.getInt() + " after " + written + " writes, not "
                            + (n + n / 2));
                }
            }
            case MAPPED_WORD_ROUND_TRIP -> {
                if (written != operations || mapped.getInt() != operations) {
                    throw new IllegalStateException("pong is " + mapped.getInt() + " after " + written + " pings, not "
                            + operations);
                }
            }
            case COPY_EACH_H2D, COPY_BATCH_H2D, COPY_EACH_D2H, COPY_BATCH_D2H -> copies.verify(submission());
            case GEMM_LT_64, GEMM_64 -> expectProduct();
            case PREPARE_FOUR -> {
                if (prepared == null || prepared.kernel() != four) {
                    throw new IllegalStateException("prepare() returned " + prepared);
                }
            }
            default -> {
                // Launches, replays, events, transfers and allocations report failure by throwing.
            }
        }
    }

    private void expectProduct() {
        short[] d = new short[TwinRow.GEMM_SIZE * TwinRow.GEMM_SIZE];
        product.bytes().copyTo(d);
        expectProduct(d);
    }

    /**
     * Every element of D, read back after the GEMM rows' GEMMs, is 64.0: each GEMM wrote all of it
     * (a NaN left means one did not). Shared with their bare twin ({@link BareGemm}).
     *
     * @throws IllegalStateException naming the first element that is not
     */
    static void expectProduct(short[] d) {
        for (int i = 0; i < d.length; i++) {
            if ((d[i] & 0xffff) != HALF_PRODUCT) {
                throw new IllegalStateException(String.format("D[%d] is fp16 0x%04x after the GEMMs, not 0x%04x (64.0)", i,
                        d[i] & 0xffff, HALF_PRODUCT));
            }
        }
    }

    private void expectFirstOutput(float expected) {
        float[] first = new float[1];
        out.asFloats().slice(0, 1).copyTo(first);
        if (Float.compare(first[0], expected) != 0) {
            throw new IllegalStateException("out[0] is " + first[0] + " after the 4-argument launches, not " + expected);
        }
    }

    private <T extends AutoCloseable> T own(T resource) {
        owned.push(resource);
        return resource;
    }

    /** Drains the stream, then closes what was set up, newest first. */
    @Override
    public void close() {
        RuntimeException failure = null;
        try {
            if (stream != null) {
                stream.synchronize();
            }
        } catch (RuntimeException e) {
            failure = e;
        }
        while (!owned.isEmpty()) {
            try {
                owned.pop().close();
            } catch (Exception e) {
                if (failure == null) {
                    failure = e instanceof RuntimeException r ? r : new IllegalStateException(e);
                } else {
                    failure.addSuppressed(e);
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }
}
