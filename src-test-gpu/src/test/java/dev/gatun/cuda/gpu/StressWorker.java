package dev.gatun.cuda.gpu;

import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CopyBatch;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.DeviceView;
import dev.gatun.cuda.Event;
import dev.gatun.cuda.Fence;
import dev.gatun.cuda.Graph;
import dev.gatun.cuda.GraphExec;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.MappedWord;
import dev.gatun.cuda.PinnedBuffer;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.StreamCapture;
import dev.gatun.cuda.WaitCondition;
import dev.gatun.cuda.WaitFlag;
import dev.gatun.cuda.WriteFlag;
import dev.gatun.cuda.graph.GraphSlot;
import dev.gatun.cuda.graph.LatchFlags;
import dev.gatun.cuda.graph.ValidationLatch;
import dev.gatun.cuda.graph.ValidationRecipient;
import dev.gatun.cuda.gpu.load.OperationMix;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Locale;
import java.util.Random;

/**
 * One stress thread: its own two streams, pinned staging pair, graph slot, graph in the shared
 * capture arena, mapped word and copy batch, plus the context's shared compute and copy streams;
 * draws operations from its seeded mix until the deadline.
 * Every device output is poisoned before the work that writes it, and so is the pinned buffer it
 * is downloaded into, so that work that did not run cannot pass for work that did.
 */
final class StressWorker {

    private static final int POISON = 0xDEADBEEF;
    private static final byte HOST_POISON = 0x5A;
    private static final int MAX_ELEMENTS = 1 << 16;
    static final int GRAPH_ELEMENTS = 4099;
    private static final int GATHER_ELEMENTS = 1000;
    private static final int TABLE_ELEMENTS = 64;
    /** Above the pool's largest class (1 GiB), so the allocation bypasses the pool. */
    private static final long PLAIN_BYTES = (1L << 30) + 4096;
    /** The most copies in one COPY_BATCH submission, and the most ints each moves: together at most MAX_ELEMENTS. */
    static final int BATCH_COPIES = 16;
    private static final int BATCH_INTS = MAX_ELEMENTS / BATCH_COPIES;

    private final StressShared shared;
    private final CudaContext ctx;
    private final int index;
    private final OperationMix<StressOperation> mix;
    private final Random random;
    private final String moduleName;
    private Stream own0;
    private Stream own1;
    private PinnedBuffer in;
    private PinnedBuffer out;
    private DeviceBuffer graphX;
    private DeviceBuffer graphY;
    private GraphSlot slot;
    private int graphA;
    private int graphB;
    private ValidationRecipient recipient;
    /** The kernel of the previous MODULE_REPLACEMENT, whose image the registry has since replaced. */
    private Kernel previous;
    private int previousVersion;
    /** This worker's graph in the shared arena: arenaY = arenaX * arenaA + arenaB, through an arena temporary. */
    private DeviceBuffer arenaX;
    private DeviceBuffer arenaY;
    private GraphExec arenaGraph;
    private int arenaA;
    private int arenaB;
    private MappedWord word;
    private int wordValue;
    private CopyBatch batch;

    StressWorker(StressShared shared, int index, OperationMix<StressOperation> mix) {
        this.shared = shared;
        this.ctx = shared.ctx;
        this.index = index;
        this.mix = mix;
        this.random = mix.random();
        this.moduleName = "stress-version-" + index;
    }

    void runUntil(long deadlineNanos) {
        try (Stream s0 = ctx.createStream(); Stream s1 = ctx.createStream();
                PinnedBuffer pinnedIn = ctx.allocatePinned(4L * MAX_ELEMENTS);
                PinnedBuffer pinnedOut = ctx.allocatePinned(4L * MAX_ELEMENTS);
                DeviceBuffer gx = ctx.allocate(4L * GRAPH_ELEMENTS); DeviceBuffer gy = ctx.allocate(4L * GRAPH_ELEMENTS);
                DeviceBuffer ax = ctx.allocate(4L * GRAPH_ELEMENTS); DeviceBuffer ay = ctx.allocate(4L * GRAPH_ELEMENTS);
                MappedWord mapped = ctx.allocateMappedWord(); CopyBatch copies = CopyBatch.create(BATCH_COPIES)) {
            own0 = s0;
            own1 = s1;
            in = pinnedIn;
            out = pinnedOut;
            graphX = gx;
            graphY = gy;
            arenaX = ax;
            arenaY = ay;
            word = mapped;
            batch = copies;
            arenaGraph = captureIntoArena();
            slot = shared.graphs.registerGroup("stress-" + index).slot("affine");
            recipient = shared.graphs.latch().register("stress-" + index);
            try {
                while (System.nanoTime() < deadlineNanos) {
                    StressOperation op = mix.next();
                    run(op);
                    shared.ran(op);
                }
            } finally {
                arenaGraph.close();
                slot.reset();
                shared.graphs.latch().unregister(recipient);
                if (previous != null) {
                    previous.close();
                }
                ctx.modules().unload(moduleName);
            }
        }
    }

    private void run(StressOperation op) {
        switch (op) {
            case POOLED -> {
                int n = size();
                try (DeviceBuffer x = ctx.allocate(4L * n); DeviceBuffer y = ctx.allocate(4L * n)) {
                    affineRoundTrip(anyStream(), x, y, n, op.name());
                }
            }
            case PLAIN -> {
                int n = size();
                try (DeviceBuffer x = ctx.allocate(PLAIN_BYTES); DeviceBuffer y = ctx.allocate(4L * n)) {
                    affineRoundTrip(anyStream(), x, y, n, op.name());
                }
            }
            case STREAM_ORDERED -> {
                int n = size();
                Stream s = random.nextBoolean() ? own0 : own1;
                try (DeviceBuffer x = s.allocate(4L * n); DeviceBuffer y = s.allocate(4L * n)) {
                    shared.streamOrderedAllocations(2);
                    affineRoundTrip(s, x, y, n, op.name());
                }
            }
            case FENCED_ACROSS_STREAMS -> fencedAcrossStreams();
            case TIMED -> timed();
            case GRAPH -> graph();
            case LATCH -> latchGeneration();
            case MODULE_REPLACEMENT -> replaceModule();
            case CLOSE_WHILE_QUEUED -> closeWhileQueued();
            case ARENA_REPLAY -> arenaReplay();
            case MAPPED_WORD -> mappedWord();
            case COPY_BATCH -> copyBatch();
        }
    }

    /** Uploads random x, runs y = x * a + b, downloads y, compares with the CPU. */
    private void affineRoundTrip(Stream s, DeviceBuffer x, DeviceBuffer y, int n, String what) {
        int[] hostX = randomInts(n);
        int a = random.nextInt() | 1;
        int b = random.nextInt();
        DeviceView xv = x.asInts().slice(0, n);
        DeviceView yv = y.asInts().slice(0, n);
        write(in, 0, hostX);
        s.upload(xv, in, 0);
        s.fill(yv, POISON);
        shared.affine.launch(s, LaunchConfig.covering(n, 128), KernelArg.pointer(yv), KernelArg.pointer(xv),
                KernelArg.i32(a), KernelArg.i32(b), KernelArg.i32(n));
        poison(out, n);
        s.download(out, 0, yv);
        check(what + " on " + s, StressKernels.affine(hostX, a, b), read(out, n));
    }

    private void fencedAcrossStreams() {
        int n = size();
        int[] hostX = randomInts(n);
        int a = random.nextInt() | 1;
        int b = random.nextInt();
        Stream copy = ctx.copyStream();
        try (DeviceBuffer x = ctx.allocate(4L * n); DeviceBuffer y = ctx.allocate(4L * n)) {
            write(in, 0, hostX);
            copy.upload(x.asInts(), in, 0);
            try (Fence uploaded = copy.recordFence()) {
                own0.waitFor(uploaded);
            }
            own0.fill(y.asInts(), POISON);
            shared.affine.launch(own0, LaunchConfig.covering(n, 128), KernelArg.pointer(y), KernelArg.pointer(x),
                    KernelArg.i32(a), KernelArg.i32(b), KernelArg.i32(n));
            try (Fence computed = own0.recordFence()) {
                own1.waitFor(computed);
            }
            poison(out, n);
            own1.download(out, 0, y.asInts());
            check("FENCED_ACROSS_STREAMS copy -> " + own0 + " -> " + own1, StressKernels.affine(hostX, a, b), read(out, n));
        }
    }

    private void timed() {
        int n = size();
        Stream s = anyStream();
        try (Event start = ctx.createTimingEvent(); Event end = ctx.createTimingEvent();
                DeviceBuffer x = ctx.allocate(4L * n); DeviceBuffer y = ctx.allocate(4L * n)) {
            start.record(s);
            affineRoundTrip(s, x, y, n, "TIMED");
            end.record(s);
            end.synchronize();
            float millis = end.elapsedMillis(start);
            if (!(millis >= 0) || Float.isInfinite(millis)) {
                shared.mismatch(String.format(Locale.ROOT, "TIMED on worker %d: elapsed time %s ms is not a finite "
                        + "number >= 0", index, millis));
            }
        }
    }

    /** Captures (or, one time in four, re-captures with new scalars) and replays the slot 1 to 3 times. */
    private void graph() {
        LaunchConfig config = LaunchConfig.covering(GRAPH_ELEMENTS, 128);
        if (!slot.hasExecutable() || random.nextInt(4) == 0) {
            graphA = random.nextInt() | 1;
            graphB = random.nextInt();
            if (slot.hasExecutable()) {
                slot.beginRecapture(0, own0, CaptureMode.THREAD_LOCAL, List.of(graphX, graphY));
            } else {
                slot.beginCapture(own0, CaptureMode.THREAD_LOCAL, List.of(graphX, graphY));
            }
            try {
                shared.affine.launch(own0, config, KernelArg.pointer(graphY), KernelArg.pointer(graphX),
                        KernelArg.i32(graphA), KernelArg.i32(graphB), KernelArg.i32(GRAPH_ELEMENTS));
            } catch (RuntimeException | Error e) {
                slot.abortCapture(); // the slot and its stream stay usable; the launch's failure is what the run reports
                throw e;
            }
            slot.endCapture();
        }
        int replays = 1 + random.nextInt(3);
        for (int r = 0; r < replays; r++) {
            int[] hostX = randomInts(GRAPH_ELEMENTS);
            write(in, 0, hostX);
            own0.upload(graphX.asInts(), in, 0);
            own0.fill(graphY.asInts(), POISON);
            slot.replay(own0);
            poison(out, GRAPH_ELEMENTS);
            own0.download(out, 0, graphY.asInts());
            check("GRAPH replay", StressKernels.affine(hostX, graphA, graphB), read(out, GRAPH_ELEMENTS));
        }
    }

    /** One latch generation around a gather on the compute stream (where the latch word is cleared). */
    private void latchGeneration() {
        int n = GATHER_ELEMENTS;
        int m = TABLE_ELEMENTS;
        int[] indices = new int[n];
        for (int i = 0; i < n; i++) {
            indices[i] = random.nextInt(m);
        }
        boolean outOfRange = random.nextInt(3) == 0;
        if (outOfRange) {
            indices[random.nextInt(n)] = m + random.nextInt(100);
        }
        int[] tableBits = new int[m];
        float[] table = new float[m];
        for (int i = 0; i < m; i++) {
            table[i] = random.nextInt(1 << 20) * 0.25f;
            tableBits[i] = Float.floatToRawIntBits(table[i]);
        }
        Stream compute = ctx.computeStream();
        ValidationLatch latch = shared.graphs.latch();
        try (DeviceBuffer index = ctx.allocate(4L * n); DeviceBuffer tab = ctx.allocate(4L * m);
                DeviceBuffer result = ctx.allocate(4L * n)) {
            write(in, 0, indices);
            write(in, 4L * n, tableBits);
            compute.upload(index.asInts(), in, 0);
            compute.upload(tab.asInts(), in, 4L * n);
            compute.fill(result.asInts(), POISON);
            int flags;
            shared.latchTurn.lock();
            try {
                long token = latch.begin(recipient);
                latch.activate(recipient, token);
                shared.gather.launch(compute, LaunchConfig.covering(n, 128), KernelArg.pointer(index), KernelArg.pointer(tab),
                        KernelArg.pointer(result), KernelArg.i32(n), KernelArg.i32(m),
                        KernelArg.pointer(shared.graphs.latchWord()));
                flags = latch.consume(recipient, token);
            } finally {
                shared.latchTurn.unlock();
            }
            if (outOfRange != ((flags & LatchFlags.OUT_OF_RANGE) != 0) || (flags & ~LatchFlags.OUT_OF_RANGE) != 0) {
                shared.mismatch(String.format(Locale.ROOT, "LATCH on worker %d: flags %#x with %s out-of-range index",
                        index, flags, outOfRange ? "an" : "no"));
            }
            poison(out, n);
            compute.download(out, 0, result.asInts());
            check("LATCH gather", StressKernels.gather(indices, table), read(out, n));
        }
    }

    /** Loads the other (or the same) image under this worker's module name; the old kernel still runs the old one. */
    private void replaceModule() {
        int version = random.nextInt(2);
        ctx.modules().load(moduleName, shared.versions[version], "version");
        Kernel current = ctx.modules().kernel(moduleName, "version");
        Stream s = anyStream();
        try (DeviceBuffer results = ctx.allocate(8)) {
            s.fill(results.asInts(), POISON);
            if (previous != null) {
                previous.launch(s, LaunchConfig.of(1, 1), KernelArg.pointer(results.asInts().slice(0, 1)));
            }
            current.launch(s, LaunchConfig.of(1, 1), KernelArg.pointer(results.asInts().slice(1, 1)));
            poison(out, 2);
            s.download(out, 0, results.asInts());
            check("MODULE_REPLACEMENT (old kernel, new kernel)",
                    new int[] {previous == null ? POISON : previousVersion + 1, version + 1}, read(out, 2));
        } finally {
            if (previous != null) {
                previous.close();
            }
            previous = current;
            previousVersion = version;
        }
    }

    /** Queues a round trip on a fresh stream, closes its buffers and the stream at once, then checks the result. */
    private void closeWhileQueued() {
        int n = size();
        int[] hostX = randomInts(n);
        int a = random.nextInt() | 1;
        int b = random.nextInt();
        Stream temp = ctx.createStream();
        boolean streamOrdered = random.nextBoolean();
        DeviceBuffer x = streamOrdered ? temp.allocate(4L * n) : ctx.allocate(4L * n);
        DeviceBuffer y = streamOrdered ? temp.allocate(4L * n) : ctx.allocate(4L * n);
        if (streamOrdered) {
            shared.streamOrderedAllocations(2);
        }
        write(in, 0, hostX);
        temp.upload(x.asInts(), in, 0);
        temp.fill(y.asInts(), POISON);
        shared.affine.launch(temp, LaunchConfig.covering(n, 128), KernelArg.pointer(y), KernelArg.pointer(x),
                KernelArg.i32(a), KernelArg.i32(b), KernelArg.i32(n));
        poison(out, n);
        temp.download(out, 0, y.asInts());
        x.close();
        y.close();
        temp.close();
        check("CLOSE_WHILE_QUEUED (" + (streamOrdered ? "stream-ordered" : "pooled") + " buffers)",
                StressKernels.affine(hostX, a, b), read(out, n));
    }

    /**
     * Captures this worker's graph into the shared arena on its own stream (other workers capture
     * theirs at the same time): the temporary it allocates is the arena's first bytes, which every
     * worker's graph uses, so their replays must be ordered across streams by Gatun.
     */
    private GraphExec captureIntoArena() {
        arenaA = random.nextInt() | 1;
        arenaB = random.nextInt();
        Graph graph;
        try (StreamCapture capture = shared.arena.beginCapture(own0, CaptureMode.THREAD_LOCAL)) {
            DeviceBuffer t = own0.allocate(4L * GRAPH_ELEMENTS);
            shared.affine.launch(own0, LaunchConfig.covering(GRAPH_ELEMENTS, 128), KernelArg.pointer(t),
                    KernelArg.pointer(arenaX), KernelArg.i32(arenaA), KernelArg.i32(arenaB), KernelArg.i32(GRAPH_ELEMENTS));
            own0.copy(arenaY.asInts(), t.asInts());
            t.close();
            graph = capture.end();
        }
        try (graph) {
            return graph.instantiate();
        }
    }

    /** Uploads x, replays this worker's arena graph on any stream, downloads y, compares with the CPU. */
    private void arenaReplay() {
        Stream s = anyStream();
        int[] hostX = randomInts(GRAPH_ELEMENTS);
        write(in, 0, hostX);
        s.upload(arenaX.asInts(), in, 0);
        s.fill(arenaY.asInts(), POISON);
        arenaGraph.launch(s);
        poison(out, GRAPH_ELEMENTS);
        s.download(out, 0, arenaY.asInts());
        check("ARENA_REPLAY on " + s, StressKernels.affine(hostX, arenaA, arenaB), read(out, GRAPH_ELEMENTS));
    }

    /**
     * One stream writes the next value into this worker's mapped word, another (or the same) waits
     * for it; once the waiter has passed its wait, the host must read that value.
     */
    private void mappedWord() {
        Stream writer = anyStream();
        Stream waiter = anyStream();
        int value = ++wordValue;
        writer.memOps().write32(word, value, WriteFlag.DEFAULT);
        waiter.memOps().wait32(word, value, WaitCondition.GEQ, WaitFlag.DEFAULT);
        waiter.synchronize();
        int seen = word.getInt();
        if (seen != value) {
            shared.mismatch(String.format(Locale.ROOT, "MAPPED_WORD on worker %d: the host read %d after %s passed its "
                    + "wait for %d written on %s", index, seen, waiter, value, writer));
        }
    }

    /**
     * 1 to {@link #BATCH_COPIES} pooled or stream-ordered buffers, uploaded from consecutive ranges of
     * the pinned input in one batch, downloaded back in another; half the time they are closed while
     * the downloads are queued.
     */
    private void copyBatch() {
        Stream s = anyStream();
        int copies = 1 + random.nextInt(BATCH_COPIES);
        DeviceBuffer[] buffers = new DeviceBuffer[copies];
        int[] offsets = new int[copies + 1];
        try {
            for (int k = 0; k < copies; k++) {
                int ints = 1 + random.nextInt(BATCH_INTS);
                offsets[k + 1] = offsets[k] + ints;
                boolean streamOrdered = random.nextBoolean();
                buffers[k] = streamOrdered ? s.allocate(4L * ints) : ctx.allocate(4L * ints);
                if (streamOrdered) {
                    shared.streamOrderedAllocations(1);
                }
            }
            int total = offsets[copies];
            int[] hostX = randomInts(total);
            write(in, 0, hostX);
            for (int k = 0; k < copies; k++) {
                batch.upload(view(buffers[k], offsets, k), in, 4L * offsets[k]);
            }
            batch.submit(s);
            poison(out, total);
            for (int k = 0; k < copies; k++) {
                batch.download(out, 4L * offsets[k], view(buffers[k], offsets, k));
            }
            batch.submit(s);
            if (random.nextBoolean()) {
                closeAll(buffers); // while the downloads are queued: freed only after them
            }
            check("COPY_BATCH of " + copies + " on " + s, hostX, read(out, total));
        } finally {
            batch.clear(); // a copy added before a failure must not ride along with the next batch
            closeAll(buffers);
        }
    }

    /** Copy k's ints of its buffer: offsets[k + 1] - offsets[k] of them. */
    private static DeviceView view(DeviceBuffer buffer, int[] offsets, int k) {
        return buffer.asInts().slice(0, offsets[k + 1] - offsets[k]);
    }

    private static void closeAll(DeviceBuffer[] buffers) {
        for (DeviceBuffer b : buffers) {
            if (b != null) {
                b.close();
            }
        }
    }

    private Stream anyStream() {
        return switch (random.nextInt(4)) {
            case 0 -> own0;
            case 1 -> own1;
            case 2 -> ctx.computeStream();
            default -> ctx.copyStream();
        };
    }

    /** 1 to 65,536 elements, small sizes as likely as large ones (log-uniform). */
    private int size() {
        return 1 + random.nextInt(1 << (1 + random.nextInt(16)));
    }

    private int[] randomInts(int n) {
        int[] v = new int[n];
        for (int i = 0; i < n; i++) {
            v[i] = random.nextInt();
        }
        return v;
    }

    private static void write(PinnedBuffer buffer, long offset, int[] values) {
        MemorySegment.copy(values, 0, buffer.segment(), ValueLayout.JAVA_INT, offset, values.length);
    }

    private static void poison(PinnedBuffer buffer, int n) {
        buffer.segment().asSlice(0, 4L * n).fill(HOST_POISON);
    }

    /** Waits for the buffer's last transfer (segment() does) and reads n ints. */
    private static int[] read(PinnedBuffer buffer, int n) {
        int[] v = new int[n];
        MemorySegment.copy(buffer.segment(), ValueLayout.JAVA_INT, 0, v, 0, n);
        return v;
    }

    private void check(String what, int[] expected, int[] got) {
        for (int i = 0; i < expected.length; i++) {
            if (expected[i] != got[i]) {
                shared.mismatch(String.format(Locale.ROOT, "%s on worker %d: element %d of %d is %#010x, expected %#010x",
                        what, index, i, expected.length, got[i], expected[i]));
                return;
            }
        }
    }
}
