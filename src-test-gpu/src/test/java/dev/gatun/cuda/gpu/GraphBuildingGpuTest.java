package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Graph;
import dev.gatun.cuda.GraphExec;
import dev.gatun.cuda.GraphNode;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.junit.RequiresGpu;
import dev.gatun.cuda.nvrtc.CompileOptions;
import dev.gatun.cuda.nvrtc.CompileTarget;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A graph built node by node (fill, kernel, copy) on the H200, replayed on random inputs with
 * poisoned outputs and checked against the CPU; then with its kernel node disabled, enabled
 * again and re-pointed; its copy and DOT dump.
 */
@RequiresGpu
class GraphBuildingGpuTest {

    static final String SOURCE = """
            extern "C" __global__ void axpy(unsigned int* y, const unsigned int* x, unsigned int a, int n) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) y[i] = y[i] * a + x[i];
            }
            """;
    private static final int POISON = 0xDEADBEEF;

    /** What the graph computes: y = fill, then y = y * a + x, then z = y. */
    private static int[] cpu(int fill, int a, int[] x) {
        int[] z = new int[x.length];
        for (int i = 0; i < x.length; i++) {
            z[i] = fill * a + x[i];
        }
        return z;
    }

    @Test
    void aBuiltGraphMatchesTheCpuAndADisabledKernelNodeIsSkipped(@TempDir Path dir) throws Exception {
        CudaContext ctx = Gpu.context();
        int n = 5003;
        long seed = Gpu.seed();
        Random r = new Random(seed);
        int fill = r.nextInt();
        int a = r.nextInt() | 1;
        NvrtcLibrary.system().compiler().load(ctx.modules(), "graph-building", SOURCE,
                CompileOptions.of(CompileTarget.ptx(ctx.device().capabilities())), "axpy");
        Stream s = ctx.createStream();
        try (Kernel axpy = ctx.modules().kernel("graph-building", "axpy"); DeviceBuffer x = ctx.allocate(4L * n);
                DeviceBuffer y = ctx.allocate(4L * n); DeviceBuffer z = ctx.allocate(4L * n);
                Graph graph = ctx.createGraph()) {
            GraphNode fillY = graph.addFill(y.asInts(), fill);
            GraphNode kernel = graph.addKernel(axpy.prepare(LaunchConfig.covering(n, 128), KernelArg.pointer(y),
                    KernelArg.pointer(x), KernelArg.i32(a), KernelArg.i32(n)), fillY);
            graph.addCopy(z.asInts(), y.asInts(), kernel);
            int[] hostX = new int[n];
            int[] out = new int[n];
            try (GraphExec exec = graph.instantiate()) {
                for (int replay = 0; replay < 20; replay++) {
                    run(exec, s, r, hostX, y, z, x, out);
                    assertArrayEquals(cpu(fill, a, hostX), out, "replay " + replay + " seed=" + seed);
                }
                exec.setEnabled(kernel, false);
                run(exec, s, r, hostX, y, z, x, out);
                int[] onlyFilled = new int[n];
                Arrays.fill(onlyFilled, fill);
                assertArrayEquals(onlyFilled, out, "the disabled kernel left the fill; seed=" + seed);
                exec.setEnabled(kernel, true);
                run(exec, s, r, hostX, y, z, x, out);
                assertArrayEquals(cpu(fill, a, hostX), out, "enabled again; seed=" + seed);
                int b = r.nextInt() | 1;
                exec.setKernelNode(kernel, axpy.prepare(LaunchConfig.covering(n, 128), KernelArg.pointer(y),
                        KernelArg.pointer(x), KernelArg.i32(b), KernelArg.i32(n)));
                run(exec, s, r, hostX, y, z, x, out);
                assertArrayEquals(cpu(fill, b, hostX), out, "re-pointed kernel node; seed=" + seed);
            }
            try (Graph copy = graph.copy(); GraphExec exec = copy.instantiate()) {
                run(exec, s, r, hostX, y, z, x, out);
                assertArrayEquals(cpu(fill, a, hostX), out, "the copy; seed=" + seed);
            }
            Path dot = dir.resolve("built.dot");
            graph.writeDot(dot);
            assertTrue(Files.readString(dot).contains("digraph"), "a DOT file at " + dot);
        } finally {
            ctx.modules().unload("graph-building");
            s.close();
        }
    }

    /** Fresh random x, poisoned y and z, one replay, z read back into {@code out} (poisoned first too). */
    static void run(GraphExec exec, Stream s, Random r, int[] hostX, DeviceBuffer y, DeviceBuffer z,
            DeviceBuffer x, int[] out) {
        for (int i = 0; i < hostX.length; i++) {
            hostX[i] = r.nextInt();
        }
        x.asInts().copyFrom(hostX);
        s.fill(y.asInts(), POISON);
        s.fill(z.asInts(), POISON);
        exec.launch(s);
        Arrays.fill(out, 0x5A5A5A5A);
        z.asInts().copyTo(out);
    }
}
