package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.testing.CounterBaseline;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.FakeKernel;
import dev.gatun.cuda.testing.Interposer;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.ScheduleExplorer;
import dev.gatun.cuda.testing.ScheduleExplorer.Step;
import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;

/**
 * Issue 34's concurrent mix on the simulated driver, with the default device pool: eight threads
 * replay graphs captured into one capture arena, on streams of their own and on shared ones,
 * write and wait on mapped words with stream memory operations, move bytes with copy batches
 * through pooled and stream-ordered buffers, and close stream-ordered buffers and temporary
 * streams in either order; every result is checked. Once everything is closed and the context
 * synchronized, every figure that must return ({@link CounterBaseline}) is back at its baseline:
 * live owners and device bytes live among them, although the pool now retains blocks (which
 * {@code bytesLive} (now {@code liveBytes}) counted before issue 34, as 1,576,960 bytes on the H100).
 */
class MixedWorkCountersTest {

    private static final int WORKERS = 8;
    private static final int OPERATIONS = 400;
    private static final int INTS = 1024;
    private static final long MIB = 1 << 20;

    @Test
    void eightThreadsOfArenaReplaysMappedWordsAndCopyBatchesLeaveEveryCounterAtItsBaseline(TestReporter reporter)
            throws Exception {
        Simulated sim = new Simulated(new FakeDriverApi()
                .attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS(), 1));
        CudaContext ctx = sim.pooledContext();
        sim.gpu.kernelBody("add", FakeKernel.ADD); // add(p, n, v): p[i] += v
        ctx.modules().load("m", ModuleImage.ptx("add.ptx", Ptx.module("add", "u64", "u32", "u32")));
        Kernel add = ctx.modules().kernel("m", "add");
        ctx.synchronize();
        CounterBaseline baseline = CounterBaseline.of(ctx);

        Mix mix = new Mix(ctx, add);
        ExecutorService pool = Executors.newFixedThreadPool(WORKERS);
        try {
            List<Future<?>> workers = new ArrayList<>();
            for (int w = 0; w < WORKERS; w++) {
                int worker = w;
                workers.add(pool.submit(() -> {
                    mix.run(worker, new Random(34_000 + worker), OPERATIONS);
                    return null;
                }));
            }
            for (Future<?> f : workers) {
                f.get(2, TimeUnit.MINUTES); // a deadlock guard; a worker's failure is rethrown here
            }
        } finally {
            pool.shutdownNow();
        }
        mix.close();
        ctx.synchronize();

        ContextCounters c = ctx.diagnostics().counters();
        reporter.publishEntry("mix", "operations " + mix.counts() + "; " + c);
        assertTrue(c.devicePoolRetainedBytes() > 0, "the pool keeps blocks for reuse: the case the issue saw");
        assertEquals(List.of(), baseline.departures(CounterBaseline.of(ctx)), "figures not back at their baseline");
        assertEquals(List.of(), sim.gpu.violations());
        add.close();
        ctx.modules().unload("m");
        ctx.close();
    }

    /**
     * The free at close of a stream-ordered buffer on its one stream, against that stream's close
     * and drain, which moves the stream's ledger into the context's counts: in every order of
     * their driver calls the allocation and its free are each counted once and no byte stays
     * live (the free at close counted on the ledger before the move, or by retirement after it).
     */
    @Test
    void aFreeAtCloseRacingTheStreamsDrainIsCountedOnce(TestReporter reporter) {
        ScheduleExplorer.Report report = ScheduleExplorer.of("free at close || stream close + drain").explore(() -> {
            Interposer interposer = Interposer.over(new FakeDriverApi());
            Simulated world = new Simulated(interposer);
            CudaContext c = world.context();
            Stream s = c.createStream();
            DeviceBuffer b = s.allocate(3 * 1024);
            s.memset(b.bytes(), (byte) 1);
            return ScheduleExplorer.Run.of(interposer, List.of(new Step("T1", b::close), new Step("T2", () -> {
                s.close();
                c.synchronize();
            })), failures -> {
                assertEquals(List.of(), failures.stream().filter(t -> t != null).toList(), "a step threw");
                c.synchronize();
                ContextCounters after = c.diagnostics().counters();
                assertArrayEquals(new long[] {1, 1, 0}, new long[] {after.asyncAllocations(), after.asyncFrees(),
                        after.liveBytes()}, "allocations, frees, bytes live");
                assertEquals(0, world.gpu.liveDeviceAllocations(), "the driver's view");
                assertEquals(0, c.diagnostics().liveOwners(OwnerKind.DEVICE_BUFFER));
            }, c::close);
        });
        reporter.publishEntry("schedules", report.toString());
    }

    /** The shared part of the mix: one arena and its graphs, shared streams, and what each worker owns. */
    private static final class Mix implements AutoCloseable {
        private final CudaContext ctx;
        private final CaptureArena arena;
        private final List<Stream> shared;
        private final List<Stream> created = new ArrayList<>();
        private final DeviceBuffer[] inputs = new DeviceBuffer[WORKERS];
        private final DeviceBuffer[] outputs = new DeviceBuffer[WORKERS];
        private final GraphExec[] replays = new GraphExec[WORKERS];
        private final long[] counts = new long[4];

        Mix(CudaContext ctx, Kernel add) {
            this.ctx = ctx;
            arena = CaptureArena.reserve(ctx, 64 * MIB);
            arena.ensure(4 * MIB);
            Stream capturing = ctx.createStream();
            for (int w = 0; w < WORKERS; w++) {
                inputs[w] = ctx.allocate(4L * INTS);
                outputs[w] = ctx.allocate(4L * INTS);
                // out = in + 1, through a temporary the arena lends every graph at the same address.
                try (StreamCapture capture = arena.beginCapture(capturing, CaptureMode.THREAD_LOCAL)) {
                    DeviceBuffer t = capturing.allocate(4L * INTS);
                    capturing.copy(t.asInts(), inputs[w].asInts());
                    add.launch(capturing, LaunchConfig.of(1, 64), KernelArg.pointer(t), KernelArg.i32(INTS),
                            KernelArg.i32(1));
                    capturing.copy(outputs[w].asInts(), t.asInts());
                    t.close();
                    try (Graph graph = capture.end()) {
                        replays[w] = graph.instantiate();
                    }
                }
            }
            capturing.close();
            created.add(ctx.createStream());
            created.add(ctx.createStream());
            shared = List.of(created.get(0), created.get(1), ctx.computeStream(), ctx.copyStream());
        }

        void run(int w, Random random, int operations) {
            try (Stream own = ctx.createStream(); MappedWord word = ctx.allocateMappedWord();
                    PinnedBuffer up = ctx.allocatePinned(64 * 1024); PinnedBuffer down = ctx.allocatePinned(64 * 1024);
                    CopyBatch batch = CopyBatch.create(16)) {
                int value = 0;
                for (int i = 0; i < operations; i++) {
                    Stream s = random.nextBoolean() ? own : shared.get(random.nextInt(shared.size()));
                    int op = random.nextInt(4);
                    switch (op) {
                        case 0 -> replay(w, s, random);
                        case 1 -> {
                            Stream waiter = random.nextBoolean() ? own : shared.get(random.nextInt(shared.size()));
                            mappedWord(word, ++value, s, waiter);
                        }
                        case 2 -> copyBatch(batch, up, down, s, random);
                        default -> temporaryStream(s, random);
                    }
                    synchronized (counts) {
                        counts[op]++;
                    }
                }
            }
        }

        /** in = random, a replay of this worker's graph on {@code s}, then out must be in + 1. */
        private void replay(int w, Stream s, Random random) {
            int[] in = random.ints(INTS).toArray();
            inputs[w].asInts().copyFrom(in); // ordered after the replays queued before, on any stream
            replays[w].launch(s);
            int[] out = new int[INTS];
            outputs[w].asInts().copyTo(out); // ordered after this replay
            for (int k = 0; k < INTS; k++) {
                in[k]++;
            }
            assertArrayEquals(in, out, "the replay on " + s);
        }

        /** {@code writer} sets the word to {@code value}, {@code waiter} waits for it; the host then reads it. */
        private static void mappedWord(MappedWord word, int value, Stream writer, Stream waiter) {
            writer.memOps().write32(word, value, WriteFlag.DEFAULT);
            waiter.memOps().wait32(word, value, WaitCondition.GEQ, WaitFlag.DEFAULT);
            waiter.synchronize();
            assertEquals(value, word.getInt(), "the word once " + waiter + " passed its wait");
        }

        /**
         * Up to 8 pooled or stream-ordered buffers of 1 to 4096 bytes, filled by one batch of uploads
         * and read back by one of downloads; half the time they are closed while the downloads are queued.
         */
        private void copyBatch(CopyBatch batch, PinnedBuffer up, PinnedBuffer down, Stream s, Random random) {
            int n = 1 + random.nextInt(8);
            List<DeviceBuffer> buffers = new ArrayList<>();
            int[] sizes = new int[n];
            for (int k = 0; k < n; k++) {
                sizes[k] = 1 + random.nextInt(4096);
                buffers.add(random.nextBoolean() ? ctx.allocate(sizes[k]) : s.allocate(sizes[k]));
            }
            byte[] data = new byte[n * 4096];
            random.nextBytes(data);
            MemorySegment.copy(MemorySegment.ofArray(data), 0, up.segment(), 0, data.length);
            for (int k = 0; k < n; k++) {
                batch.upload(buffers.get(k).bytes(), up, 4096L * k);
            }
            batch.submit(s);
            down.segment().fill((byte) 0x5A);
            for (int k = 0; k < n; k++) {
                batch.download(down, 4096L * k, buffers.get(k).bytes());
            }
            batch.submit(s);
            boolean closeWhileQueued = random.nextBoolean();
            if (closeWhileQueued) {
                buffers.forEach(DeviceBuffer::close);
            }
            byte[] back = down.segment().toArray(ValueLayout.JAVA_BYTE); // waits for the downloads
            for (int k = 0; k < n; k++) {
                for (int b = 0; b < sizes[k]; b++) {
                    assertEquals(data[4096 * k + b], back[4096 * k + b], "byte " + b + " of copy " + k);
                }
            }
            if (!closeWhileQueued) {
                buffers.forEach(DeviceBuffer::close);
            }
        }

        /**
         * A stream-ordered buffer on a temporary stream, used on {@code other} too half the time (then
         * retirement frees it), closed before or after its stream.
         */
        private void temporaryStream(Stream other, Random random) {
            Stream temp = ctx.createStream();
            int n = 2 + random.nextInt(INTS);
            DeviceBuffer b = temp.allocate(4L * n);
            temp.fill(b.asInts(), 7);
            if (random.nextBoolean()) {
                try (Fence filled = temp.recordFence()) {
                    other.waitFor(filled);
                }
                other.fill(b.asInts().slice(0, 1), 8);
            }
            int[] got = new int[n];
            b.asInts().copyTo(got);
            assertEquals(7, got[n - 1], "the fill on the temporary stream");
            if (random.nextBoolean()) {
                temp.close();
                b.close();
            } else {
                b.close();
                temp.close();
            }
        }

        String counts() {
            synchronized (counts) {
                return "replays " + counts[0] + ", mapped words " + counts[1] + ", copy batches " + counts[2]
                        + ", temporary streams " + counts[3];
            }
        }

        @Override
        public void close() {
            for (int w = 0; w < WORKERS; w++) {
                replays[w].close();
                inputs[w].close();
                outputs[w].close();
            }
            arena.close();
            created.forEach(Stream::close);
        }
    }
}
