package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

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
import dev.gatun.cuda.junit.RequiresGpu;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;

/**
 * A producer/consumer pair of kernel nodes built by hand and joined by a programmatic dependency
 * (cuGraphAddDependencies_v2, programmatic port), on random inputs with poisoned outputs against
 * the CPU, beside the same pair joined by an ordinary edge; the time of 200 launches of each is
 * reported, not asserted. The kernels are {@link LaunchAttributesGpuTest}'s PDL pair.
 */
@RequiresGpu
class ProgrammaticEdgeGpuTest {

    private static final int POISON = 0xDEADBEEF;
    private static final int TIMED = 200;

    @Test
    void aHandBuiltProgrammaticPairMatchesTheCpuLikeAnOrdinaryPair(TestReporter reporter) {
        CudaContext ctx = Gpu.context();
        assumeTrue(ctx.device().capabilities().computeMajor() >= 9, "programmatic dependencies need sm_90");
        int n = (1 << 16) + 5;
        long seed = Gpu.seed();
        Random r = Gpu.random(seed);
        try (Kernel produce = Gpu.kernel(LaunchAttributesGpuTest.SOURCE, "produce");
                Kernel consume = Gpu.kernel(LaunchAttributesGpuTest.SOURCE, "consume"); Stream s = ctx.createStream();
                DeviceBuffer x = ctx.allocate(4L * n); DeviceBuffer y = ctx.allocate(4L * n);
                DeviceBuffer a = ctx.allocate(4L * n); DeviceBuffer b = ctx.allocate(4L * n);
                Graph ordinary = ctx.createGraph(); Graph programmatic = ctx.createGraph()) {
            LaunchConfig grid = LaunchConfig.covering(n, 256);
            KernelLaunch producer = produce.prepare(grid, KernelArg.pointer(a), KernelArg.pointer(x),
                    KernelArg.i32(LaunchAttributesGpuTest.ROUNDS), KernelArg.i32(n));
            KernelLaunch consumer = consume.prepare(grid, KernelArg.pointer(b), KernelArg.pointer(a), KernelArg.pointer(y),
                    KernelArg.i32(n));
            ordinary.addKernel(consumer, ordinary.addKernel(producer));
            GraphNode p = programmatic.addKernel(producer);
            GraphNode c = programmatic.addKernel(consumer);
            programmatic.addProgrammaticDependency(p, c);
            long[] nanos = new long[2];
            int which = 0;
            for (Graph g : new Graph[] {ordinary, programmatic}) {
                try (GraphExec exec = g.instantiate()) {
                    for (int replay = 0; replay < 5; replay++) {
                        int[] hx = LaunchAttributesGpuTest.random(r, n);
                        int[] hy = LaunchAttributesGpuTest.random(r, n);
                        x.asInts().copyFrom(hx);
                        y.asInts().copyFrom(hy);
                        s.fill(a.asInts(), POISON);
                        s.fill(b.asInts(), POISON);
                        exec.launch(s);
                        assertArrayEquals(LaunchAttributesGpuTest.consumed(LaunchAttributesGpuTest.produced(hx), hy),
                                LaunchAttributesGpuTest.read(b, n), (which == 0 ? "ordinary" : "programmatic")
                                        + " pair, replay " + replay + "; seed=" + seed);
                    }
                    s.synchronize();
                    long start = System.nanoTime();
                    for (int i = 0; i < TIMED; i++) {
                        exec.launch(s);
                    }
                    s.synchronize();
                    nanos[which++] = System.nanoTime() - start;
                }
            }
            reporter.publishEntry("programmatic edge", String.format("%d launches: ordinary edge %.1f us/launch, "
                    + "programmatic edge %.1f us/launch (seed %d)", TIMED, nanos[0] / 1e3 / TIMED, nanos[1] / 1e3 / TIMED,
                    seed));
        }
    }
}
