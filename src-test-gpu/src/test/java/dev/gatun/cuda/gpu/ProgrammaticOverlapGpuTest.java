package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Graph;
import dev.gatun.cuda.GraphExec;
import dev.gatun.cuda.GraphNode;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.KernelLaunch;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.StreamCapture;
import dev.gatun.cuda.junit.RequiresGpu;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;

/**
 * Evidence that a producer/consumer pair joined by a hand-built programmatic edge
 * ({@code Graph.addProgrammaticDependency}) overlaps as a captured programmatic dependent launch
 * does, and that an ordinary edge does not. The kernels stamp {@code %globaltimer}: each producer
 * block when it triggers its dependents (at its start) and when it ends (after a long loop); each
 * consumer block when its independent part starts (before {@code griddepcontrol.wait}) and when
 * that wait returns. Three graphs run the same pair on random inputs into poisoned outputs,
 * checked against the CPU: an ordinary edge, the hand-built programmatic edge, and a captured
 * pair launched with programmatic stream serialization.
 *
 * <p>Asserted is only what is guaranteed: every stamp written, every consumer block's wait
 * returning no earlier than the last producer block's end (the wait returns once the producer
 * grid has completed), and under the ordinary edge no consumer block starting before that end.
 * How many consumer blocks started early under the programmatic edges, and the median time from
 * the producer's end to a consumer block's start (negative: before it), are printed on lines
 * beginning {@code PROGRAMMATIC-OVERLAP} and reported, not asserted. The producer has fewer
 * blocks than the device has multiprocessors, so dependents have room to start.
 */
@RequiresGpu
class ProgrammaticOverlapGpuTest {

    static final String SOURCE = LaunchAttributesGpuTest.DEPENDENT_LAUNCH_CONTROL + """
            __device__ __forceinline__ unsigned long long now() {
                unsigned long long t;
                asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) :: "memory");
                return t;
            }
            // Triggers its dependents at once, then mixes each input for `rounds` rounds and keeps
            // its block busy for at least `busy` nanoseconds, so that the consumer can start meanwhile.
            extern "C" __global__ void produce(unsigned int* a, const unsigned int* x, int rounds, int n,
                    unsigned long long busy, unsigned long long* triggered, unsigned long long* ended) {
                unsigned long long start = now();
                if (threadIdx.x == 0) triggered[blockIdx.x] = start;
                trigger_dependents();
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) {
                    unsigned int v = x[i];
                    for (int k = 0; k < rounds; k++) v = v * 1664525u + 1013904223u;
                    a[i] = v;
                }
                while (now() - start < busy) { }
                __syncthreads();
                if (threadIdx.x == 0) ended[blockIdx.x] = now();
            }
            // The independent part (its own input) first; the producer's output only after the wait.
            extern "C" __global__ void consume(unsigned int* b, const unsigned int* a, const unsigned int* y, int n,
                    unsigned long long* started, unsigned long long* waited) {
                if (threadIdx.x == 0) started[blockIdx.x] = now();
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                unsigned int own = i < n ? y[i] * 5u + 3u : 0u;
                wait_for_prerequisites();
                if (threadIdx.x == 0) waited[blockIdx.x] = now();
                if (i < n) b[i] = (a[i] ^ own) + 1u;
            }
            """;

    private static final int POISON = 0xDEADBEEF;
    /** A stamp never written: every byte of the poison fill. */
    private static final long UNSTAMPED = 0xFFFFFFFFFFFFFFFFL;
    private static final int ROUNDS = 4096;
    /** How long each producer block stays busy at least: a few hundred microseconds. */
    private static final long BUSY_NANOS = 300_000;
    private static final int PRODUCER_THREADS = 256;
    private static final int CONSUMER_THREADS = 128;
    private static final int REPLAYS = 3;

    /** The figures of one replay of one graph, from its stamps. */
    private record Overlap(int consumerBlocks, int startedEarly, double medianStartMicros,
            double firstStartAfterTriggerMicros, long lastProducerEnd, long firstWaitReturn) {

        static Overlap of(long[] triggered, long[] ended, long[] started, long[] waited) {
            long lastTrigger = Arrays.stream(triggered).max().orElseThrow();
            long lastEnd = Arrays.stream(ended).max().orElseThrow();
            int early = (int) Arrays.stream(started).filter(t -> t < lastEnd).count();
            long[] fromEnd = Arrays.stream(started).map(t -> t - lastEnd).sorted().toArray();
            long firstStart = Arrays.stream(started).min().orElseThrow();
            return new Overlap(started.length, early, fromEnd[fromEnd.length / 2] / 1e3,
                    (firstStart - lastTrigger) / 1e3, lastEnd, Arrays.stream(waited).min().orElseThrow());
        }

        String describe() {
            return String.format("%d of %d consumer blocks started their independent part before the last producer "
                    + "block ended; median from that end to a consumer block's start %.1f us; first consumer start "
                    + "%.1f us after the last producer trigger", startedEarly, consumerBlocks, medianStartMicros,
                    firstStartAfterTriggerMicros);
        }
    }

    @Test
    @Tag(GpuTags.TIMING)
    void aHandBuiltProgrammaticEdgeOverlapsLikeACapturedPairAndAnOrdinaryEdgeDoesNot(TestReporter reporter) {
        CudaContext ctx = Gpu.context();
        assumeTrue(ctx.device().capabilities().computeMajor() >= 9, "programmatic dependencies need sm_90");
        int sms = ctx.device().capabilities().multiprocessorCount();
        int producerBlocks = Math.max(1, sms / 4); // leaves most multiprocessors free for the consumer
        int n = producerBlocks * PRODUCER_THREADS - 3; // the last block has threads without an element
        int consumerBlocks = (n + CONSUMER_THREADS - 1) / CONSUMER_THREADS;
        long seed = Gpu.seed();
        Random r = Gpu.random(seed);
        try (Kernel produce = Gpu.kernel(SOURCE, "produce"); Kernel consume = Gpu.kernel(SOURCE, "consume");
                Stream s = ctx.createStream();
                DeviceBuffer x = ctx.allocate(4L * n); DeviceBuffer y = ctx.allocate(4L * n);
                DeviceBuffer a = ctx.allocate(4L * n); DeviceBuffer b = ctx.allocate(4L * n);
                DeviceBuffer triggered = ctx.allocate(8L * producerBlocks);
                DeviceBuffer ended = ctx.allocate(8L * producerBlocks);
                DeviceBuffer started = ctx.allocate(8L * consumerBlocks);
                DeviceBuffer waited = ctx.allocate(8L * consumerBlocks)) {
            LaunchConfig producerGrid = LaunchConfig.of(producerBlocks, PRODUCER_THREADS);
            LaunchConfig consumerGrid = LaunchConfig.of(consumerBlocks, CONSUMER_THREADS);
            KernelLaunch producer = produce.prepare(producerGrid, KernelArg.pointer(a), KernelArg.pointer(x),
                    KernelArg.i32(ROUNDS), KernelArg.i32(n), KernelArg.i64(BUSY_NANOS), KernelArg.pointer(triggered),
                    KernelArg.pointer(ended));
            KernelArg[] consumerArgs = {KernelArg.pointer(b), KernelArg.pointer(a), KernelArg.pointer(y), KernelArg.i32(n),
                KernelArg.pointer(started), KernelArg.pointer(waited)};
            KernelLaunch consumer = consume.prepare(consumerGrid, consumerArgs);
            KernelLaunch dependent = consume.prepare(consumerGrid.withProgrammaticStreamSerialization(true), consumerArgs);

            try (Graph ordinary = ctx.createGraph(); Graph handBuilt = ctx.createGraph(); Graph captured = capture(s,
                    producer, dependent)) {
                ordinary.addKernel(consumer, ordinary.addKernel(producer));
                GraphNode p = handBuilt.addKernel(producer);
                GraphNode c = handBuilt.addKernel(consumer);
                handBuilt.addProgrammaticDependency(p, c);
                String[] names = {"ordinary edge", "hand-built programmatic edge", "captured PDL pair"};
                Graph[] graphs = {ordinary, handBuilt, captured};
                for (int g = 0; g < graphs.length; g++) {
                    try (GraphExec exec = graphs[g].instantiate()) {
                        for (int replay = 0; replay < REPLAYS; replay++) {
                            String where = names[g] + ", replay " + replay + "; seed=" + seed;
                            int[] hx = LaunchAttributesGpuTest.random(r, n);
                            int[] hy = LaunchAttributesGpuTest.random(r, n);
                            x.asInts().copyFrom(hx);
                            y.asInts().copyFrom(hy);
                            for (DeviceBuffer out : new DeviceBuffer[] {a, b}) {
                                s.fill(out.asInts(), POISON);
                            }
                            for (DeviceBuffer stamps : new DeviceBuffer[] {triggered, ended, started, waited}) {
                                s.fill(stamps.asInts(), -1);
                            }
                            exec.launch(s);
                            assertArrayEquals(LaunchAttributesGpuTest.consumed(LaunchAttributesGpuTest.produced(hx, ROUNDS), hy), LaunchAttributesGpuTest.read(b, n), where);
                            Overlap overlap = Overlap.of(stamps(triggered, producerBlocks, where),
                                    stamps(ended, producerBlocks, where), stamps(started, consumerBlocks, where),
                                    stamps(waited, consumerBlocks, where));
                            assertTrue(overlap.firstWaitReturn() >= overlap.lastProducerEnd(), where + ": a consumer "
                                    + "block's wait returned before the producer grid had ended");
                            if (g == 0) {
                                assertEquals(0, overlap.startedEarly(), where + ": under a full dependency no consumer "
                                        + "block starts before the producer has ended");
                            }
                            String line = "PROGRAMMATIC-OVERLAP " + names[g] + ", replay " + replay + ": "
                                    + overlap.describe() + " (producer " + producerBlocks + " blocks busy >= "
                                    + BUSY_NANOS / 1000 + " us, " + sms + " SMs, seed " + seed + ")";
                            System.out.println(line);
                            reporter.publishEntry("programmatic overlap " + names[g] + " " + replay, line);
                        }
                    }
                }
            }
        }
    }

    /** The producer, then the consumer launched with programmatic stream serialization, captured on {@code s}. */
    private static Graph capture(Stream s, KernelLaunch producer, KernelLaunch dependent) {
        try (StreamCapture capture = s.beginCapture(CaptureMode.THREAD_LOCAL)) {
            producer.launch(s);
            dependent.launch(s);
            return capture.end();
        }
    }

    /** The {@code count} stamps in {@code buffer}, each checked to have been written. */
    private static long[] stamps(DeviceBuffer buffer, int count, String where) {
        long[] out = new long[count];
        buffer.asLongs().copyTo(out);
        for (int i = 0; i < count; i++) {
            assertTrue(out[i] != UNSTAMPED && out[i] != 0, where + ": block " + i + " wrote no stamp in " + buffer);
        }
        return out;
    }
}
