package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.gatun.cuda.ClusterSchedulingPolicy;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Event;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.KernelLaunch;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.junit.RequiresGpu;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;

/**
 * Launch attributes on the H200: two dependent kernels with programmatic stream serialization
 * (programmatic dependent launch), the same pair on two streams joined by a programmatic event,
 * a launch with a launch completion event, a launch with a priority and cluster launches with
 * each scheduling policy, all checked against the CPU on random inputs into poisoned outputs.
 * The dependent pair is also timed with and without PDL, GPU-bound (queued behind a kernel that
 * holds the stream); both times are reported, not asserted.
 */
@RequiresGpu
class LaunchAttributesGpuTest {

    /**
     * griddepcontrol.launch_dependents and griddepcontrol.wait, which the runtime's
     * cudaTriggerProgrammaticLaunchCompletion() and cudaGridDependencySynchronize() compile to;
     * inline PTX keeps the sources free of runtime headers. They exist from sm_90 on; below that
     * they compile to nothing (and Gatun refuses the attribute there).
     */
    static final String DEPENDENT_LAUNCH_CONTROL = """
            __device__ __forceinline__ void trigger_dependents() {
            #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
                asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
            #endif
            }
            __device__ __forceinline__ void wait_for_prerequisites() {
            #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
                asm volatile("griddepcontrol.wait;" ::: "memory");
            #endif
            }
            """;
    /**
     * The producer mixes each input for {@code rounds} rounds (so it takes a while), writes it,
     * then lets the dependent grid start; the consumer does its independent part first and waits
     * for the producer's grid (completion and memory flush) only before it reads the producer's
     * output.
     */
    static final String SOURCE = DEPENDENT_LAUNCH_CONTROL + """
            extern "C" __global__ void produce(unsigned int* a, const unsigned int* x, int rounds, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) {
                    unsigned int v = x[i];
                    for (int k = 0; k < rounds; k++) v = v * 1664525u + 1013904223u;
                    a[i] = v;
                }
                trigger_dependents();
            }
            extern "C" __global__ void hold(unsigned long long nanos) {
                unsigned long long start, now;
                asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
                do {
                    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
                } while (now - start < nanos);
            }
            extern "C" __global__ void consume(unsigned int* b, const unsigned int* a, const unsigned int* y, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                unsigned int own = i < n ? y[i] * 5u + 3u : 0u;
                wait_for_prerequisites();
                if (i < n) b[i] = (a[i] ^ own) + 1u;
            }
            """;
    private static final int POISON = 0xDEADBEEF;
    static final int ROUNDS = 64;
    /** Timed producer/consumer pairs per round; queued well within {@link #HOLD_NANOS}. */
    private static final int PAIRS = 200;
    private static final int TIMED_ROUNDS = 5;
    private static final long HOLD_NANOS = 30_000_000;

    private static float median(float[] values) {
        float[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }

    static int[] random(Random r, int n) {
        int[] v = new int[n];
        for (int i = 0; i < n; i++) {
            v[i] = r.nextInt();
        }
        return v;
    }

    static int[] produced(int[] x) {
        return produced(x, ROUNDS);
    }

    static int[] produced(int[] x, int rounds) {
        int[] a = new int[x.length];
        for (int i = 0; i < x.length; i++) {
            int v = x[i];
            for (int k = 0; k < rounds; k++) {
                v = v * 1664525 + 1013904223;
            }
            a[i] = v;
        }
        return a;
    }

    static int[] consumed(int[] a, int[] y) {
        int[] b = new int[a.length];
        for (int i = 0; i < a.length; i++) {
            b[i] = (a[i] ^ (y[i] * 5 + 3)) + 1;
        }
        return b;
    }

    static int[] read(DeviceBuffer b, int n) {
        int[] out = new int[n];
        b.asInts().copyTo(out);
        return out;
    }

    @Test
    void dependentKernelsWithProgrammaticStreamSerializationMatchTheCpu(TestReporter report) {
        CudaContext ctx = Gpu.context();
        assumeTrue(ctx.device().capabilities().computeMajor() >= 9, "programmatic dependent launch needs sm_90");
        int n = (1 << 16) + 5;
        long seed = Gpu.seed();
        Random r = Gpu.random(seed);
        int[] x = random(r, n);
        int[] y = random(r, n);
        int[] expected = consumed(produced(x), y);
        Stream stream = ctx.computeStream();
        try (Kernel produce = Gpu.kernel(SOURCE, "produce"); Kernel consume = Gpu.kernel(SOURCE, "consume");
                Kernel hold = Gpu.kernel(SOURCE, "hold");
                DeviceBuffer dx = ctx.allocate(4L * n); DeviceBuffer dy = ctx.allocate(4L * n);
                DeviceBuffer da = ctx.allocate(4L * n); DeviceBuffer db = ctx.allocate(4L * n);
                Event start = ctx.createTimingEvent(); Event end = ctx.createTimingEvent()) {
            dx.asInts().copyFrom(x);
            dy.asInts().copyFrom(y);
            LaunchConfig grid = LaunchConfig.covering(n, 256);
            KernelLaunch first = produce.prepare(grid, KernelArg.pointer(da), KernelArg.pointer(dx), KernelArg.i32(ROUNDS),
                    KernelArg.i32(n));
            KernelLaunch plain = consume.prepare(grid, KernelArg.pointer(db), KernelArg.pointer(da), KernelArg.pointer(dy),
                    KernelArg.i32(n));
            KernelLaunch dependent = consume.prepare(grid.withProgrammaticStreamSerialization(true), KernelArg.pointer(db),
                    KernelArg.pointer(da), KernelArg.pointer(dy), KernelArg.i32(n));
            // The timed pairs queue behind a kernel that holds the stream for HOLD_NANOS, far longer
            // than the host needs to issue them, so the events time the GPU running the pairs back
            // to back and not the host issuing them (about 3.5 µs a launch here, more than either kernel).
            KernelLaunch holdStream = hold.prepare(LaunchConfig.of(1, 1), KernelArg.i64(HOLD_NANOS));
            float[][] millis = new float[2][TIMED_ROUNDS];
            for (int round = 0; round < TIMED_ROUNDS; round++) {
                for (KernelLaunch second : new KernelLaunch[] {plain, dependent}) {
                    int variant = second == dependent ? 1 : 0;
                    stream.fill(da.asInts(), POISON);
                    stream.fill(db.asInts(), POISON);
                    first.launch(stream);
                    second.launch(stream);
                    assertArrayEquals(expected, read(db, n), "one pair, " + (variant == 1 ? "with" : "without")
                            + " PDL, seed=" + seed);
                    stream.fill(db.asInts(), POISON);
                    holdStream.launch(stream);
                    start.record(stream);
                    for (int p = 0; p < PAIRS; p++) {
                        first.launch(stream);
                        second.launch(stream);
                    }
                    end.record(stream);
                    end.synchronize();
                    millis[variant][round] = end.elapsedMillis(start);
                    assertArrayEquals(expected, read(db, n), "after " + PAIRS + " pairs, seed=" + seed);
                }
            }
            float without = median(millis[0]);
            float with = median(millis[1]);
            report.publishEntry("pdl.pairs", PAIRS + " pairs, median of " + TIMED_ROUNDS + " alternating rounds");
            report.publishEntry("pdl.withoutMillis", Arrays.toString(millis[0]));
            report.publishEntry("pdl.withMillis", Arrays.toString(millis[1]));
            report.publishEntry("pdl.speedup", Float.toString(without / with));
        }
    }

    /**
     * The producer runs on one stream with a programmatic event, the consumer on another that
     * waits for the event: the consumer may start once every producer block has triggered (or,
     * with triggerAtBlockStart, begun), and its griddepcontrol.wait holds its reads of the
     * producer's output until the producer grid has completed and its writes are visible. A
     * long producer (many rounds) makes a consumer that read too early see the poison.
     */
    @Test
    void aConsumerOnAnotherStreamWaitingForAProgrammaticEventMatchesTheCpu() {
        CudaContext ctx = Gpu.context();
        assumeTrue(ctx.device().capabilities().computeMajor() >= 9, "programmatic events need sm_90");
        int n = (1 << 18) + 7;
        int rounds = 4096;
        long seed = Gpu.seed();
        Random r = Gpu.random(seed);
        try (Kernel produce = Gpu.kernel(SOURCE, "produce"); Kernel consume = Gpu.kernel(SOURCE, "consume");
                DeviceBuffer dx = ctx.allocate(4L * n); DeviceBuffer dy = ctx.allocate(4L * n);
                DeviceBuffer da = ctx.allocate(4L * n); DeviceBuffer db = ctx.allocate(4L * n);
                Event triggered = ctx.createEvent(); Stream producer = ctx.createStream();
                Stream consumer = ctx.createStream()) {
            LaunchConfig grid = LaunchConfig.covering(n, 256);
            KernelLaunch second = consume.prepare(grid, KernelArg.pointer(db), KernelArg.pointer(da), KernelArg.pointer(dy),
                    KernelArg.i32(n));
            for (boolean atBlockStart : new boolean[] {false, true}) {
                KernelLaunch first = produce.prepare(grid.withProgrammaticEvent(triggered, atBlockStart),
                        KernelArg.pointer(da), KernelArg.pointer(dx), KernelArg.i32(rounds), KernelArg.i32(n));
                for (int round = 0; round < 5; round++) {
                    int[] x = random(r, n);
                    int[] y = random(r, n);
                    dx.asInts().copyFrom(x);
                    dy.asInts().copyFrom(y);
                    producer.fill(da.asInts(), POISON);
                    consumer.fill(db.asInts(), POISON);
                    first.launch(producer);
                    consumer.waitFor(triggered);
                    second.launch(consumer);
                    assertArrayEquals(consumed(produced(x, rounds), y), read(db, n), "triggerAtBlockStart="
                            + atBlockStart + ", round " + round + ", seed=" + seed);
                    triggered.synchronize();
                    assertTrue(triggered.query(), "the event fired");
                }
            }
        }
    }

    /** A launch completion event fires once every block has begun; the kernel's output is checked after it. */
    @Test
    void aLaunchWithALaunchCompletionEventMatchesTheCpuAndFiresTheEvent() {
        CudaContext ctx = Gpu.context();
        int n = (1 << 16) + 1;
        long seed = Gpu.seed();
        int[] x = random(Gpu.random(seed), n);
        try (Kernel produce = Gpu.kernel(SOURCE, "produce"); DeviceBuffer dx = ctx.allocate(4L * n);
                DeviceBuffer da = ctx.allocate(4L * n); Event started = ctx.createEvent()) {
            dx.asInts().copyFrom(x);
            ctx.computeStream().fill(da.asInts(), POISON);
            produce.launch(ctx.computeStream(), LaunchConfig.covering(n, 128).withLaunchCompletionEvent(started),
                    KernelArg.pointer(da), KernelArg.pointer(dx), KernelArg.i32(ROUNDS), KernelArg.i32(n));
            started.synchronize();
            assertTrue(started.query());
            assertArrayEquals(produced(x), read(da, n), "seed=" + seed);
        }
    }

    @Test
    void aLaunchWithTheHighestPriorityMatchesTheCpu() {
        CudaContext ctx = Gpu.context();
        int n = (1 << 18) + 3;
        long seed = Gpu.seed();
        int[] x = random(Gpu.random(seed), n);
        try (Kernel produce = Gpu.kernel(SOURCE, "produce"); DeviceBuffer dx = ctx.allocate(4L * n);
                DeviceBuffer da = ctx.allocate(4L * n)) {
            dx.asInts().copyFrom(x);
            ctx.computeStream().fill(da.asInts(), POISON);
            produce.launch(ctx.computeStream(), LaunchConfig.covering(n, 128).withPriority(ctx.greatestStreamPriority()),
                    KernelArg.pointer(da), KernelArg.pointer(dx), KernelArg.i32(ROUNDS), KernelArg.i32(n));
            assertArrayEquals(produced(x), read(da, n), "seed=" + seed);
        }
    }

    @Test
    void clusterLaunchesWithEachSchedulingPolicyMatchTheCpu() {
        CudaContext ctx = Gpu.context();
        assumeTrue(ctx.device().capabilities().computeMajor() >= 9, "clusters need sm_90");
        int n = 256 * 64;
        long seed = Gpu.seed();
        int[] x = random(Gpu.random(seed), n);
        try (Kernel produce = Gpu.kernel(SOURCE, "produce"); DeviceBuffer dx = ctx.allocate(4L * n);
                DeviceBuffer da = ctx.allocate(4L * n)) {
            dx.asInts().copyFrom(x);
            for (ClusterSchedulingPolicy policy : ClusterSchedulingPolicy.values()) {
                ctx.computeStream().fill(da.asInts(), POISON);
                produce.launch(ctx.computeStream(), LaunchConfig.of(64, 256).withCluster(2, 1, 1)
                        .withClusterSchedulingPolicy(policy), KernelArg.pointer(da), KernelArg.pointer(dx),
                        KernelArg.i32(ROUNDS), KernelArg.i32(n));
                assertArrayEquals(produced(x), read(da, n), policy + ", seed=" + seed);
            }
        }
    }
}
