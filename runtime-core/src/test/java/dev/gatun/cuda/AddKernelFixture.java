package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.FakeKernel;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.util.Arrays;
import java.util.List;

/**
 * What the tests of graph nodes share: a simulated device, its context, a stream and the kernel
 * {@code add(p, n, v)} ({@code p[i] += v} for {@code n} words), and at the end the check that
 * nothing was left alive or misused.
 */
final class AddKernelFixture implements AutoCloseable {

    /** The words each launch adds to. */
    static final int N = 8;

    final Simulated sim;
    final CudaContext ctx;
    final Stream stream;
    final Kernel add;

    AddKernelFixture(FakeDriverApi gpu) {
        sim = new Simulated(gpu);
        ctx = sim.context();
        stream = ctx.createStream();
        gpu.kernelBody("add", FakeKernel.ADD);
        ctx.modules().load("a", ModuleImage.ptx("add.ptx", Ptx.module("add", "u64", "u32", "u32")));
        add = ctx.modules().kernel("a", "add");
    }

    /** A launch adding {@code value} to each of {@code v}'s first {@link #N} words. */
    KernelLaunch launch(DeviceBuffer v, int value) {
        return add.prepare(LaunchConfig.of(1, N), KernelArg.pointer(v), KernelArg.i32(N), KernelArg.i32(value));
    }

    static int[] read(DeviceBuffer b) {
        int[] out = new int[N];
        b.asInts().copyTo(out);
        return out;
    }

    static int[] filled(int value) {
        int[] out = new int[N];
        Arrays.fill(out, value);
        return out;
    }

    /** Closes the kernel, stream and context (which refuses while an owner is open) and checks the simulated GPU. */
    @Override
    public void close() {
        add.close();
        stream.close();
        ctx.close();
        assertEquals(List.of(), sim.gpu.violations());
        assertEquals(0, sim.gpu.liveGraphs());
        assertEquals(0, sim.gpu.liveGraphExecs());
    }
}
