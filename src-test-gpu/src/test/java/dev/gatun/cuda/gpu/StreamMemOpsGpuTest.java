package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

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
import dev.gatun.cuda.MappedWord;
import dev.gatun.cuda.MemOp;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.StreamCapture;
import dev.gatun.cuda.WaitCondition;
import dev.gatun.cuda.WaitFlag;
import dev.gatun.cuda.WriteFlag;
import dev.gatun.cuda.junit.RequiresGpu;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Stream memory operations and mapped words on a real GPU, against the CPU, on random inputs
 * with poisoned outputs: writes of 32/64-bit words; a stream that waits (GEQ) for a value another
 * stream writes only after a slow kernel produced the input the waiting stream reads; a kernel
 * that sets a mapped word the host polls; a captured write replayed three times; a batch node.
 * Prints the latency from a stream write of a mapped word to the host seeing it, beside the
 * synchronous 4-byte readback (no timed assertion: runtime-bench measures it).
 */
@RequiresGpu
class StreamMemOpsGpuTest {

    private static final String SOURCE = """
            extern "C" __global__ void slow_produce(unsigned int* x, const unsigned int* seed, int rounds, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) {
                    unsigned int v = seed[i];
                    for (int k = 0; k < rounds; k++) v = v * 1664525u + 1013904223u;
                    x[i] = v;
                }
            }
            extern "C" __global__ void transform(unsigned int* out, const unsigned int* x, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) out[i] = (x[i] ^ 0x9E3779B9u) * 3u + 1u;
            }
            extern "C" __global__ void hold(long long nanos) {
                unsigned long long start, now;
                asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
                do {
                    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
                } while (now - start < (unsigned long long) nanos);
            }
            extern "C" __global__ void set_word(volatile unsigned int* word, unsigned int value) {
                __threadfence_system();
                *word = value;
            }
            """;
    private static final int POISON = 0xDEADBEEF;
    private static final int ROUNDS = 20_000;
    /** How long the writer's stream is held before it produces: far longer than the host takes to queue the waiter's work. */
    private static final long HOLD_NANOS = 20_000_000L;
    /** A bound on a host poll that should end within microseconds: a lost write fails instead of hanging. */
    private static final long POLL_LIMIT_NANOS = 10_000_000_000L;

    private static int[] random(Random r, int n) {
        int[] v = new int[n];
        for (int i = 0; i < n; i++) {
            v[i] = r.nextInt();
        }
        return v;
    }

    private static int[] produced(int[] seed, int rounds) {
        int[] x = new int[seed.length];
        for (int i = 0; i < seed.length; i++) {
            int v = seed[i];
            for (int k = 0; k < rounds; k++) {
                v = v * 1664525 + 1013904223;
            }
            x[i] = v;
        }
        return x;
    }

    private static int[] transformed(int[] x) {
        int[] out = new int[x.length];
        for (int i = 0; i < x.length; i++) {
            out[i] = (x[i] ^ 0x9E3779B9) * 3 + 1;
        }
        return out;
    }

    /** Spins on acquire reads until the word's low 32 bits are {@code expected}; fails after the bound. */
    private static void awaitWord(MappedWord word, int expected, String what) {
        long start = System.nanoTime();
        while (word.getInt() != expected) {
            if (System.nanoTime() - start > POLL_LIMIT_NANOS) {
                fail(what + ": the host never saw " + expected + " (last read " + word.getInt() + ")");
            }
            Thread.onSpinWait();
        }
    }

    @Test
    void writesOf32And64BitWordsLandWhereTheCpuExpects() {
        CudaContext ctx = Gpu.context();
        long seed = Gpu.seed();
        Random r = Gpu.random(seed);
        boolean wide = ctx.device().streamMemOpSupport().values64();
        int n = 1024;
        try (Stream s = ctx.createStream(); DeviceBuffer words = ctx.allocate(8L * n)) {
            s.fill(words.asInts(), POISON);
            int[] expected = new int[2 * n];
            Arrays.fill(expected, POISON);
            for (int k = 0; k < 200; k++) {
                int slot = r.nextInt(n);
                if (wide && r.nextBoolean()) {
                    long v = r.nextLong();
                    s.memOps().write64(words.asLongs().slice(slot, 1), v, WriteFlag.DEFAULT);
                    expected[2 * slot] = (int) v;
                    expected[2 * slot + 1] = (int) (v >>> 32);
                } else {
                    int i = r.nextInt(2 * n);
                    int v = r.nextInt();
                    s.memOps().write32(words.asInts().slice(i, 1), v, WriteFlag.DEFAULT);
                    expected[i] = v;
                }
            }
            int[] got = new int[2 * n];
            words.asInts().copyTo(got);
            assertArrayEquals(expected, got, "64-bit supported=" + wide + ", seed=" + seed);
        }
    }

    @Test
    void aStreamWaitingForAValueRunsOnlyAfterAnotherStreamWroteIt() {
        CudaContext ctx = Gpu.context();
        int n = (1 << 16) + 7;
        long seed = Gpu.seed();
        Random r = Gpu.random(seed);
        LaunchConfig grid = LaunchConfig.covering(n, 256);
        try (Kernel produce = Gpu.kernel(SOURCE, "slow_produce"); Kernel transform = Gpu.kernel(SOURCE, "transform");
                Kernel hold = Gpu.kernel(SOURCE, "hold"); Stream waiter = ctx.createStream(); Stream writer = ctx.createStream();
                DeviceBuffer flag = ctx.allocate(4); DeviceBuffer seeds = ctx.allocate(4L * n);
                DeviceBuffer x = ctx.allocate(4L * n); DeviceBuffer out = ctx.allocate(4L * n)) {
            flag.asInts().copyFrom(new int[] {0});
            KernelLaunch holdWriter = hold.prepare(LaunchConfig.of(1, 1), KernelArg.i64(HOLD_NANOS));
            for (int round = 1; round <= 4; round++) {
                int target = round * 10;
                int[] hostSeeds = random(r, n);
                seeds.asInts().copyFrom(hostSeeds);
                x.asInts().copyFrom(filled(n, POISON));
                out.asInts().copyFrom(filled(n, POISON));
                // The waiter reads x, which only the writer's kernel fills after a 20 ms hold:
                // without the wait the transform runs during the hold and reads poison. The writer's
                // work is queued first: under initcheck a launch returns only once its kernel has
                // run, so a transform queued behind a wait that a later host call releases never
                // returns (it stalled the whole initcheck run on the H100, 9e28154).
                holdWriter.launch(writer);
                produce.prepare(grid, KernelArg.pointer(x), KernelArg.pointer(seeds), KernelArg.i32(ROUNDS),
                        KernelArg.i32(n)).launch(writer);
                writer.memOps().write32(flag.asInts(), target - 1, WriteFlag.DEFAULT); // not yet: GEQ target
                writer.memOps().write32(flag.asInts(), target, WriteFlag.DEFAULT);
                waiter.memOps().wait32(flag.asInts(), target, WaitCondition.GEQ, WaitFlag.DEFAULT);
                transform.prepare(grid, KernelArg.pointer(out), KernelArg.pointer(x), KernelArg.i32(n)).launch(waiter);
                waiter.synchronize();
                int[] got = new int[n];
                out.asInts().copyTo(got);
                assertArrayEquals(transformed(produced(hostSeeds, ROUNDS)), got, "round " + round + ", seed=" + seed);
            }
        }
    }

    @Test
    void theHostSeesTheValuesAKernelWritesToAMappedWord() {
        CudaContext ctx = Gpu.context();
        long seed = Gpu.seed();
        Random r = Gpu.random(seed);
        try (Kernel set = Gpu.kernel(SOURCE, "set_word"); Stream s = ctx.createStream();
                MappedWord word = ctx.allocateMappedWord()) {
            for (int k = 0; k < 64; k++) {
                int v = r.nextInt() | 1; // never 0, the value the host resets it to
                word.setInt(0);
                set.prepare(LaunchConfig.of(1, 1), KernelArg.address(word.deviceAddress()), KernelArg.i32(v)).launch(s);
                awaitWord(word, v, "value " + k + ", seed=" + seed);
            }
            s.synchronize(); // the kernels used the raw address: done before the word closes
        }
    }

    @Test
    void aCapturedWriteIsReplayedWithItsKernelThreeTimes() {
        CudaContext ctx = Gpu.context();
        int n = (1 << 15) + 1;
        long seed = Gpu.seed();
        Random r = Gpu.random(seed);
        LaunchConfig grid = LaunchConfig.covering(n, 256);
        try (Kernel transform = Gpu.kernel(SOURCE, "transform"); Stream s = ctx.createStream();
                DeviceBuffer x = ctx.allocate(4L * n); DeviceBuffer out = ctx.allocate(4L * n);
                MappedWord done = ctx.allocateMappedWord()) {
            Graph g;
            try (StreamCapture capture = s.beginCapture(CaptureMode.THREAD_LOCAL)) {
                transform.prepare(grid, KernelArg.pointer(out), KernelArg.pointer(x), KernelArg.i32(n)).launch(s);
                s.memOps().write32(done, 7, WriteFlag.DEFAULT);
                g = capture.end();
            }
            try (g; GraphExec exec = g.instantiate()) {
                for (int replay = 1; replay <= 3; replay++) {
                    int[] hostX = random(r, n);
                    x.asInts().copyFrom(hostX);
                    out.asInts().copyFrom(filled(n, POISON));
                    done.setInt(0);
                    exec.launch(s);
                    awaitWord(done, 7, "replay " + replay);
                    int[] got = new int[n];
                    out.asInts().copyTo(got);
                    assertArrayEquals(transformed(hostX), got, "replay " + replay + ", seed=" + seed);
                }
            }
        }
    }

    @Test
    @Tag(GpuTags.BREAKS_INITCHECK)
    void aBatchNodeWritesItsWordsAfterTheKernelItDependsOn() {
        CudaContext ctx = Gpu.context();
        int n = 4099;
        long seed = Gpu.seed();
        Random r = Gpu.random(seed);
        boolean wide = ctx.device().streamMemOpSupport().values64();
        LaunchConfig grid = LaunchConfig.covering(n, 256);
        try (Kernel transform = Gpu.kernel(SOURCE, "transform"); Stream s = ctx.createStream();
                DeviceBuffer x = ctx.allocate(4L * n); DeviceBuffer out = ctx.allocate(4L * n);
                DeviceBuffer words = ctx.allocate(16); MappedWord done = ctx.allocateMappedWord();
                Graph g = ctx.createGraph()) {
            int first = r.nextInt();
            long second = r.nextLong();
            GraphNode k = g.addKernel(transform.prepare(grid, KernelArg.pointer(out), KernelArg.pointer(x),
                    KernelArg.i32(n)));
            List<MemOp> ops = new ArrayList<>();
            ops.add(MemOp.write32(words.asInts().slice(0, 1), first, WriteFlag.DEFAULT));
            if (wide) {
                ops.add(MemOp.write64(words.asLongs().slice(1, 1), second, WriteFlag.DEFAULT));
            }
            ops.add(MemOp.wait32(words.asInts().slice(0, 1), first, WaitCondition.EQ, WaitFlag.DEFAULT));
            ops.add(MemOp.write32(done, 1, WriteFlag.DEFAULT));
            g.addBatchMemOps(ops, k);
            try (GraphExec exec = g.instantiate()) {
                int[] hostX = random(r, n);
                x.asInts().copyFrom(hostX);
                out.asInts().copyFrom(filled(n, POISON));
                s.fill(words.asInts(), POISON);
                exec.launch(s);
                awaitWord(done, 1, "the batch node's last write");
                int[] got = new int[n];
                out.asInts().copyTo(got);
                assertArrayEquals(transformed(hostX), got, "seed=" + seed);
                long[] w = new long[2];
                words.asLongs().copyTo(w);
                assertEquals(first, (int) w[0], "seed=" + seed);
                assertEquals(wide ? second : ((long) POISON << 32) | (POISON & 0xFFFF_FFFFL), w[1], "seed=" + seed);
            }
        }
    }

    @Test
    void printsTheLatencyFromAStreamWriteToTheHostSeeingIt() {
        CudaContext ctx = Gpu.context();
        int rounds = 2000;
        long[] seen = new long[rounds];
        long[] readback = new long[rounds];
        try (Stream s = ctx.createStream(); MappedWord word = ctx.allocateMappedWord(); DeviceBuffer one = ctx.allocate(4)) {
            one.asInts().copyFrom(new int[] {1});
            int[] host = new int[1];
            for (int i = 0; i < rounds; i++) {
                int v = i + 1;
                long t0 = System.nanoTime();
                s.memOps().write32(word, v, WriteFlag.DEFAULT);
                awaitWord(word, v, "latency round " + i);
                seen[i] = System.nanoTime() - t0;
                long t1 = System.nanoTime();
                one.asInts().copyTo(host);
                readback[i] = System.nanoTime() - t1;
            }
            assertEquals(1, host[0]);
        }
        Arrays.sort(seen);
        Arrays.sort(readback);
        System.out.printf("mapped word: write32 to host-seen median %.2f us p99 %.2f us; synchronous 4-byte readback "
                + "median %.2f us p99 %.2f us (%d rounds)%n", seen[rounds / 2] / 1e3, seen[rounds * 99 / 100] / 1e3,
                readback[rounds / 2] / 1e3, readback[rounds * 99 / 100] / 1e3, rounds);
    }

    private static int[] filled(int n, int value) {
        int[] v = new int[n];
        Arrays.fill(v, value);
        return v;
    }
}
