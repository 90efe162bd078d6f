package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.GraphUpdateResult;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.graph.CudaGraphs;
import dev.gatun.cuda.graph.GraphCounters;
import dev.gatun.cuda.graph.GraphSlot;
import dev.gatun.cuda.junit.RequiresGpu;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;

/**
 * A {@link GraphSlot} whose segment is re-captured with two shapes in turn (one kernel, then two:
 * another topology), with new random scalars each time and new random inputs for each replay,
 * into a poisoned output checked against the CPU. After the first two instantiations every
 * re-capture is taken by the slot's spare executable, updated in place; the counts and the mean
 * time of a re-capture are printed on a line beginning {@code GRAPHSLOT-SPARE} and reported.
 */
@RequiresGpu
class GraphSlotSpareGpuTest {

    private static final String SOURCE = """
            extern "C" __global__ void affine(unsigned int* y, const unsigned int* x, unsigned int a, unsigned int b,
                    int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) y[i] = x[i] * a + b;
            }
            extern "C" __global__ void again(unsigned int* y, unsigned int a, unsigned int b, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) y[i] = y[i] * a + b;
            }
            """;
    private static final int POISON = 0xDEADBEEF;
    private static final int RECAPTURES = 40;
    private static final int REPLAYS = 3;

    @Test
    void twoAlternatingShapesSettleIntoSpareUpdatesAndMatchTheCpu(TestReporter reporter) {
        CudaContext ctx = Gpu.context();
        CudaGraphs graphs = CudaGraphs.create(ctx);
        int n = (1 << 16) + 3;
        long seed = Gpu.seed();
        Random r = Gpu.random(seed);
        LaunchConfig grid = LaunchConfig.covering(n, 256);
        try (Kernel affine = Gpu.kernel(SOURCE, "affine"); Kernel again = Gpu.kernel(SOURCE, "again");
                Stream s = ctx.createStream(); DeviceBuffer x = ctx.allocate(4L * n); DeviceBuffer y = ctx.allocate(4L * n)) {
            GraphSlot slot = graphs.registerGroup("spare").slot("alternating");
            long recaptureNanos = 0;
            for (int capture = 0; capture <= RECAPTURES; capture++) {
                boolean two = capture % 2 == 1; // shape 0: one kernel; shape 1: two kernels
                int[] scalars = {r.nextInt(), r.nextInt(), r.nextInt(), r.nextInt()};
                long t0 = System.nanoTime();
                if (capture == 0) {
                    slot.beginCapture(s, CaptureMode.THREAD_LOCAL);
                } else {
                    slot.beginRecapture(0, s, CaptureMode.THREAD_LOCAL);
                }
                affine.launch(s, grid, KernelArg.pointer(y), KernelArg.pointer(x), KernelArg.i32(scalars[0]),
                        KernelArg.i32(scalars[1]), KernelArg.i32(n));
                if (two) {
                    again.launch(s, grid, KernelArg.pointer(y), KernelArg.i32(scalars[2]), KernelArg.i32(scalars[3]),
                            KernelArg.i32(n));
                }
                slot.endCapture();
                if (capture > 0) {
                    recaptureNanos += System.nanoTime() - t0;
                }
                for (int replay = 0; replay < REPLAYS; replay++) {
                    int[] hx = LaunchAttributesGpuTest.random(r, n);
                    x.asInts().copyFrom(hx);
                    s.fill(y.asInts(), POISON);
                    slot.replay(s);
                    assertArrayEquals(cpu(hx, scalars, two), LaunchAttributesGpuTest.read(y, n), "capture " + capture
                            + " (" + (two ? "two kernels" : "one kernel") + "), replay " + replay + "; seed=" + seed);
                }
            }
            GraphCounters counts = slot.counters();
            String line = String.format("GRAPHSLOT-SPARE %d re-captures alternating two topologies: %d updated in place, "
                    + "%d taken by the spare, %d re-instantiated; refusals %s, spare refusals %s; mean re-capture "
                    + "%.1f us (seed %d)", RECAPTURES, counts.updatesInPlace(), counts.spareUpdates(),
                    counts.reinstantiations(), slot.updateRefusals(), slot.spareUpdateRefusals(),
                    recaptureNanos / 1e3 / RECAPTURES, seed);
            System.out.println(line);
            reporter.publishEntry("graphslot spare", line);
            assertEquals(1, counts.reinstantiations(), "only the first re-capture is instantiated (with the append, "
                    + "the first two instantiations)");
            assertEquals(RECAPTURES - 1, counts.spareUpdates(), "every later re-capture is taken by the spare");
            assertEquals(Map.of(GraphUpdateResult.TOPOLOGY_CHANGED, (long) RECAPTURES), slot.updateRefusals());
            assertEquals(Map.of(), slot.spareUpdateRefusals());
            assertTrue(slot.hasSpare());
            assertTrue(slot.reset());
        } finally {
            graphs.close();
        }
    }

    private static int[] cpu(int[] x, int[] scalars, boolean two) {
        int[] y = new int[x.length];
        for (int i = 0; i < x.length; i++) {
            y[i] = x[i] * scalars[0] + scalars[1];
            if (two) {
                y[i] = y[i] * scalars[2] + scalars[3];
            }
        }
        return y;
    }
}
