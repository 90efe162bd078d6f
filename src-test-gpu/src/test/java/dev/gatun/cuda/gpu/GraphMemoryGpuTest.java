package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Graph;
import dev.gatun.cuda.GraphAllocationCounters;
import dev.gatun.cuda.GraphExec;
import dev.gatun.cuda.MemoryUsage;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.StreamCapture;
import dev.gatun.cuda.junit.RequiresGpu;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;

/**
 * Allocations inside a stream capture on a real device: a temporary allocated, written, read and
 * freed inside the capture, and an output allocated in it that the graph keeps. Each replay of
 * fresh random input matches the CPU, the output keeps the address it had at capture, the
 * device's graph memory counters rise while it is allocated, and a trim after everything is
 * closed and freed gives reserved graph memory back.
 */
@RequiresGpu
class GraphMemoryGpuTest {

    private static final int POISON = 0x5A5A5A5A;

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

    private static int[] cpu(int[] in, int a, int b) {
        int n = in.length;
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = in[i] * a + b;
        }
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            out[i] = (t[i] ^ (in[i] >>> 3)) + t[(i + 1) % n];
        }
        return out;
    }

    @Test
    void replaysOfACaptureThatAllocatesMatchTheCpuAtTheSameAddressAndTrimGivesMemoryBack(TestReporter report) {
        long seed = Gpu.seed();
        Random random = Gpu.random(seed);
        int n = (1 << 20) + 1 + random.nextInt(4096); // a little over 4 MiB of ints
        int a = random.nextInt() | 1;
        int b = random.nextInt();
        long bytes = 4L * n;
        String why = "n=" + n + " a=" + a + " b=" + b + " seed=" + seed;
        LaunchConfig grid = LaunchConfig.covering(n, 256);

        CudaContext ctx = Gpu.context();
        GraphAllocationCounters before = ctx.diagnostics().graphAllocationCounters();
        MemoryUsage start = ctx.diagnostics().graphMemoryUsage();
        Stream s = ctx.createStream();
        try (Kernel scale = Gpu.kernel(SCALE, "scale"); Kernel mix = Gpu.kernel(MIX, "mix");
                DeviceBuffer in = ctx.allocate(bytes)) {
            Graph graph;
            long addressAtCapture;
            try (StreamCapture capture = s.beginCapture(CaptureMode.THREAD_LOCAL)) {
                DeviceBuffer t = s.allocate(bytes);
                s.fill(t.asInts(), POISON); // so an element the kernel misses shows
                scale.launch(s, grid, KernelArg.pointer(t), KernelArg.pointer(in), KernelArg.i32(a), KernelArg.i32(b),
                        KernelArg.i32(n));
                DeviceBuffer out = s.allocate(bytes);
                addressAtCapture = out.address();
                s.fill(out.asInts(), POISON); // every replay poisons its output first
                mix.launch(s, grid, KernelArg.pointer(out), KernelArg.pointer(t), KernelArg.pointer(in), KernelArg.i32(n));
                t.close(); // a free node: the temporary lives only inside each launch
                graph = capture.end();
            }
            assertTrue(graph.hasMemoryNodes());
            assertEquals(1, graph.allocations().size(), "the output only: " + graph.allocations());
            DeviceBuffer out = graph.allocations().get(0);
            assertEquals(before.allocations() + 2, ctx.diagnostics().graphAllocationCounters().allocations());

            MemoryUsage launched;
            try (graph; GraphExec exec = graph.instantiate()) {
                int[] host = new int[n];
                for (int replay = 0; replay < 3; replay++) {
                    int[] input = random.ints(n).toArray();
                    in.asInts().copyFrom(input);
                    if (replay > 0) {
                        s.fill(out.asInts(), ~POISON); // out exists after a launch; the replay must overwrite it
                    }
                    exec.launch(s);
                    Arrays.fill(host, POISON);
                    out.asInts().copyTo(host); // a synchronous read after the replay
                    assertArrayEquals(cpu(input, a, b), host, "replay " + replay + " " + why);
                    assertEquals(addressAtCapture, out.address(), "the address of every replay is the capture's");
                }
                launched = ctx.diagnostics().graphMemoryUsage();
                report.publishEntry("graph memory after the replays", launched.toString());
                assertTrue(launched.usedBytes() >= start.usedBytes() + bytes,
                        "out stays allocated after the launch: " + start + " -> " + launched);
                assertTrue(launched.peakUsedBytes() >= launched.usedBytes(), "high-water mark: " + launched);
                assertTrue(launched.reservedBytes() >= launched.usedBytes(), "reserved covers used: " + launched);
            }
            out.close(); // freed now that the graph and its executable are closed, after their work
            // Each synchronize completes the fences recorded so far and reaps: the executable's
            // destroy, then the graph's, then out's free, each recording fences of its own.
            for (int round = 0; round < 10 && ctx.diagnostics().graphAllocationCounters().liveAllocations() != before.liveAllocations(); round++) {
                ctx.synchronize();
            }
            assertEquals(before.liveAllocations(), ctx.diagnostics().graphAllocationCounters().liveAllocations(), "every graph allocation retired");
            ctx.synchronize(); // out's stream-ordered free (queued on the copy stream by the last reap) has run

            ctx.diagnostics().trimGraphMemory();
            MemoryUsage trimmed = ctx.diagnostics().graphMemoryUsage();
            report.publishEntry("graph memory after the frees and a trim", trimmed.toString());
            assertTrue(trimmed.usedBytes() < launched.usedBytes(), "out was freed: " + launched + " -> " + trimmed);
            assertTrue(trimmed.reservedBytes() < launched.reservedBytes(),
                    "the trim gave reserved graph memory back: " + launched + " -> " + trimmed);
            ctx.diagnostics().resetGraphMemoryPeaks();
            MemoryUsage reset = ctx.diagnostics().graphMemoryUsage();
            assertEquals(reset.usedBytes(), reset.peakUsedBytes(), "the used high-water mark reset: " + reset);
            assertEquals(reset.reservedBytes(), reset.peakReservedBytes(), "the reserved high-water mark reset: " + reset);
        } finally {
            s.close();
        }
    }
}
