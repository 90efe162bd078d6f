package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CaptureArena;
import dev.gatun.cuda.CaptureArenaCounters;
import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Graph;
import dev.gatun.cuda.GraphExec;
import dev.gatun.cuda.GraphInstallCounters;
import dev.gatun.cuda.MemoryUsage;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.StreamCapture;
import dev.gatun.cuda.UpdatingExecutable;
import dev.gatun.cuda.junit.RequiresGpu;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;

/**
 * Capture arenas on a real device. Three shapes (each a different node count and size) are
 * captured into one arena: no memory nodes, every replay of random input matches the CPU with
 * its output at the same address, and the device memory used is the arena's, not the sum of the
 * three graphs'. A replay on a second stream is ordered after the arena's last replay. Then a
 * 1,000-replay run re-captures the three shapes through the update-or-instantiate policy and
 * prints a line starting {@code ARENA-FIGURES} with the arena's figures and the path counts.
 */
@RequiresGpu
class CaptureArenaGpuTest {

    private static final int POISON = 0x5A5A5A5A;
    private static final long MiB = 1 << 20;

    /** t[i] = in[i] * a + b, in wrapping 32-bit integers. */
    private static final String SCALE = """
            extern "C" __global__ void scale(unsigned int* t, const unsigned int* in, unsigned int a, unsigned int b, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) t[i] = in[i] * a + b;
            }
            """;

    /** out[i] = t[i] ^ (in[i] >> 3) + t[(i + 1) % n], in wrapping 32-bit integers. */
    private static final String MIX = """
            extern "C" __global__ void mix(unsigned int* out, const unsigned int* t, const unsigned int* in, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) out[i] = (t[i] ^ (in[i] >> 3)) + t[(i + 1) % n];
            }
            """;

    /** One shape: n ints, and how many extra scale passes (a different node count each). */
    private record Shape(int n, int passes) {
        long bytes() {
            return 4L * n;
        }

        /** What a capture of it takes from an arena: the temporary and the output, each 256-aligned. */
        long arenaBytes() {
            return 2 * ((bytes() + 255) / 256 * 256);
        }
    }

    private static int[] cpu(int[] in, Shape shape, int a, int b) {
        int n = shape.n();
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = in[i] * a + b;
        }
        for (int p = 0; p < shape.passes(); p++) {
            for (int i = 0; i < n; i++) {
                t[i] = t[i] * a + b;
            }
        }
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            out[i] = (t[i] ^ (in[i] >>> 3)) + t[(i + 1) % n];
        }
        return out;
    }

    private Kernel scale;
    private Kernel mix;

    /** Queues one shape on {@code s}: t and out from the arena (poisoned first), t freed in the capture; returns out. */
    private DeviceBuffer queue(Stream s, DeviceBuffer in, Shape shape, int a, int b) {
        LaunchConfig grid = LaunchConfig.covering(shape.n(), 256);
        DeviceBuffer t = s.allocate(shape.bytes());
        s.fill(t.asInts(), POISON); // an element a kernel misses shows
        scale.launch(s, grid, KernelArg.pointer(t), KernelArg.pointer(in), KernelArg.i32(a), KernelArg.i32(b),
                KernelArg.i32(shape.n()));
        for (int p = 0; p < shape.passes(); p++) {
            scale.launch(s, grid, KernelArg.pointer(t), KernelArg.pointer(t), KernelArg.i32(a), KernelArg.i32(b),
                    KernelArg.i32(shape.n()));
        }
        DeviceBuffer out = s.allocate(shape.bytes());
        s.fill(out.asInts(), POISON);
        mix.launch(s, grid, KernelArg.pointer(out), KernelArg.pointer(t), KernelArg.pointer(in), KernelArg.i32(shape.n()));
        t.close();
        return out;
    }

    private Graph capture(CaptureArena arena, Stream s, DeviceBuffer in, Shape shape, int a, int b) {
        try (StreamCapture capture = arena.beginCapture(s, CaptureMode.THREAD_LOCAL)) {
            queue(s, in, shape, a, b);
            return capture.end();
        }
    }

    private static int[] read(DeviceBuffer out, int n) {
        int[] host = new int[n];
        Arrays.fill(host, ~POISON);
        out.asInts().slice(0, n).copyTo(host);
        return host;
    }

    @Test
    @Tag(GpuTags.MEASURES_DEVICE_MEMORY)
    void threeShapesShareOneArenaAtStableAddressesAndUseOnlyItsMemory(TestReporter report) {
        long seed = Gpu.seed();
        Random random = Gpu.random(seed);
        // 16, 32 and 64 MiB outputs (a little more): the three graphs' memory would sum to about 224 MiB.
        Shape[] shapes = {new Shape((4 << 20) + random.nextInt(1024), 0), new Shape((8 << 20) + random.nextInt(1024), 1),
            new Shape((16 << 20) + random.nextInt(1024), 2)};
        int a = random.nextInt() | 1;
        int b = random.nextInt();
        String why = "seed=" + seed + " a=" + a + " b=" + b;
        CudaContext ctx = Gpu.context();
        int largest = shapes[2].n();
        try (Kernel sc = Gpu.kernel(SCALE, "scale"); Kernel mx = Gpu.kernel(MIX, "mix");
                DeviceBuffer in = ctx.allocate(4L * largest); Stream s = ctx.createStream(); Stream other = ctx.createStream();
                CaptureArena arena = CaptureArena.reserve(ctx, 1024 * MiB)) {
            scale = sc;
            mix = mx;
            long need = 0;
            for (Shape shape : shapes) {
                long peak = arena.probe(s, CaptureMode.THREAD_LOCAL, st -> queue(st, in, shape, a, b));
                assertEquals(shape.arenaBytes(), peak, "probe of " + shape);
                need = Math.max(need, peak);
            }
            ctx.synchronize();
            MemoryUsage graphMemoryBefore = ctx.diagnostics().graphMemoryUsage();
            long freeBefore = ctx.diagnostics().memoryInfo().freeBytes();
            arena.ensure(need);
            List<Graph> graphs = new ArrayList<>();
            List<GraphExec> execs = new ArrayList<>();
            long[] addresses = new long[shapes.length];
            try {
                for (int k = 0; k < shapes.length; k++) {
                    Graph g = capture(arena, s, in, shapes[k], a, b);
                    assertFalse(g.hasMemoryNodes(), "an arena graph has no memory nodes");
                    graphs.add(g);
                    execs.add(g.instantiate());
                    addresses[k] = g.allocations().get(0).address();
                    assertEquals(arena.baseAddress() + shapes[k].arenaBytes() / 2, addresses[k], "out follows t");
                }
                for (int round = 0; round < 3; round++) {
                    for (int k = 0; k < shapes.length; k++) {
                        int[] input = random.ints(largest).toArray();
                        in.asInts().copyFrom(input);
                        DeviceBuffer out = graphs.get(k).allocations().get(0);
                        s.fill(out.asInts(), ~POISON); // the replay must overwrite it
                        execs.get(k).launch(s);
                        assertArrayEquals(cpu(Arrays.copyOf(input, shapes[k].n()), shapes[k], a, b),
                                read(out, shapes[k].n()), "round " + round + " shape " + k + " " + why);
                        assertEquals(addresses[k], out.address());
                    }
                }
                // Shape 0 on s, shape 2 (whose temporary covers shape 0's output) on another stream,
                // then shape 0 again on s: ordered, the last replay's output is whole.
                int[] input = random.ints(largest).toArray();
                in.asInts().copyFrom(input);
                long ordered = arena.counters().orderedReplays();
                execs.get(0).launch(s);
                execs.get(2).launch(other);
                execs.get(0).launch(s);
                assertEquals(ordered + 2, arena.counters().orderedReplays());
                assertArrayEquals(cpu(Arrays.copyOf(input, shapes[0].n()), shapes[0], a, b),
                        read(graphs.get(0).allocations().get(0), shapes[0].n()), "after a replay on another stream " + why);

                ctx.synchronize();
                long used = freeBefore - ctx.diagnostics().memoryInfo().freeBytes();
                CaptureArenaCounters c = arena.counters();
                long sum = 0;
                for (Shape shape : shapes) {
                    sum += shape.arenaBytes();
                }
                report.publishEntry("arena", c + " device memory used " + used + " bytes; the three graphs' sum "
                        + sum);
                assertEquals(graphMemoryBefore.usedBytes(), ctx.diagnostics().graphMemoryUsage().usedBytes(), "no graph memory");
                assertTrue(c.mappedBytes() >= need && c.mappedBytes() < need + c.chunkBytes(), c.toString());
                // The executables take a little memory of their own; the arena is all the rest.
                assertTrue(Math.abs(used - c.mappedBytes()) < 32 * MiB,
                        "device memory used " + used + " vs the arena's " + c.mappedBytes());
                assertTrue(used < sum - 64 * MiB, "used " + used + " is not the sum of the graphs, " + sum);
            } finally {
                execs.forEach(GraphExec::close);
                for (Graph g : graphs) {
                    g.allocations().forEach(DeviceBuffer::close);
                    g.close();
                }
            }
        }
    }

    @Test
    void aThousandReplaysOverThreeShapesThroughTheUpdatePolicy(TestReporter report) {
        long seed = Gpu.seed();
        Random random = Gpu.random(seed);
        Shape[] shapes = {new Shape((1 << 16) + random.nextInt(256), 0), new Shape((1 << 17) + random.nextInt(256), 1),
            new Shape((1 << 18) + random.nextInt(256), 2)};
        int replays = 1000;
        CudaContext ctx = Gpu.context();
        int largest = shapes[2].n();
        try (Kernel sc = Gpu.kernel(SCALE, "scale"); Kernel mx = Gpu.kernel(MIX, "mix");
                DeviceBuffer in = ctx.allocate(4L * largest); Stream s = ctx.createStream();
                CaptureArena arena = CaptureArena.reserve(ctx, 256 * MiB)) {
            scale = sc;
            mix = mx;
            long need = 0;
            for (Shape shape : shapes) {
                need = Math.max(need, arena.probe(s, CaptureMode.THREAD_LOCAL, st -> queue(st, in, shape, 3, 1)));
            }
            ctx.synchronize();
            long freeBefore = ctx.diagnostics().memoryInfo().freeBytes();
            arena.ensure(need);
            // Shape 0 has a policy of its own (every re-capture updates in place); shapes 1 and 2,
            // of different node counts, share one (the spare takes the alternation).
            UpdatingExecutable own = null;
            UpdatingExecutable shared = null;
            try {
                for (int i = 0; i < replays; i++) {
                    int k = i % 3;
                    Shape shape = shapes[k];
                    int a = random.nextInt() | 1;
                    int b = random.nextInt();
                    DeviceBuffer out;
                    try (Graph g = capture(arena, s, in, shape, a, b)) {
                        out = g.allocations().get(0);
                        assertEquals(arena.baseAddress() + shape.arenaBytes() / 2, out.address(), "replay " + i);
                        if (k == 0) {
                            if (own == null) {
                                own = UpdatingExecutable.instantiate(g);
                            } else {
                                own.install(g);
                            }
                        } else if (shared == null) {
                            shared = UpdatingExecutable.instantiate(g);
                        } else {
                            shared.install(g);
                        }
                    }
                    int[] input = random.ints(shape.n()).toArray();
                    in.asInts().slice(0, shape.n()).copyFrom(input);
                    (k == 0 ? own : shared).launch(s);
                    assertArrayEquals(cpu(input, shape, a, b), read(out, shape.n()), "replay " + i + " seed=" + seed);
                    out.close();
                }
                ctx.synchronize();
                long used = freeBefore - ctx.diagnostics().memoryInfo().freeBytes();
                CaptureArenaCounters c = arena.counters();
                GraphInstallCounters o = own.counters();
                GraphInstallCounters sh = shared.counters();
                String figures = "ARENA-FIGURES replays=" + replays + " shapes=" + shapes.length
                        + " reservedBytes=" + c.reservedBytes() + " mappedBytes=" + c.mappedBytes()
                        + " chunkBytes=" + c.chunkBytes() + " peakCaptureBytes=" + c.peakCaptureBytes()
                        + " sumOfShapesBytes=" + (shapes[0].arenaBytes() + shapes[1].arenaBytes() + shapes[2].arenaBytes())
                        + " deviceUsedDeltaBytes=" + used + " captures=" + c.captures() + " probes=" + c.probes()
                        + " overflows=" + c.overflows() + " orderedReplays=" + c.orderedReplays()
                        + " updates=" + (o.updates() + sh.updates()) + " spareUpdates=" + (o.spareUpdates() + sh.spareUpdates())
                        + " instantiations=" + (o.instantiations() + sh.instantiations())
                        + " refusals=" + sh.refusals() + " spareRefusals=" + sh.spareRefusals()
                        + " (shape 0 alone: " + o + "; shapes 1 and 2 shared: " + sh + ")";
                System.out.println(figures);
                report.publishEntry("arena figures", figures);
                int ownCaptures = (replays + 2) / 3; // i % 3 == 0
                int sharedCaptures = replays - ownCaptures;
                assertEquals(replays, c.captures());
                assertEquals(new GraphInstallCounters(ownCaptures - 1, 0, 1, Map.of(), Map.of()), o,
                        "shape 0 updates in place after its first instantiation");
                assertEquals(2, sh.instantiations(), "shapes 1 and 2 settle into spare updates");
                assertEquals(sharedCaptures - 2, sh.spareUpdates());
                // Every install on the shared policy is refused by the current executable (the other
                // shape; the driver's reason is expected to be TOPOLOGY_CHANGED, and printed above).
                assertEquals(sharedCaptures - 1, sh.refusals().values().stream().mapToLong(Long::longValue).sum(),
                        "the current executable is always of the other shape: " + sh.refusals());
            } finally {
                if (own != null) {
                    own.close();
                }
                if (shared != null) {
                    shared.close();
                }
            }
        }
    }
}
