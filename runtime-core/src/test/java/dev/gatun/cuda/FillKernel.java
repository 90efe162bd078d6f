package dev.gatun.cuda;

import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;

/**
 * A simulated kernel {@code fill(p, n, v)}, {@code p[i] = v + i}, loaded as module {@code "m"},
 * and the arrays tests compare its output with: what it writes into {@link #N} ints, and a
 * poison to fill the output with first.
 */
final class FillKernel {

    /** The ints the tests fill. */
    static final int N = 64;

    private FillKernel() {
    }

    /** Gives the simulated GPU the kernel's body and loads its module into {@code ctx} as {@code "m"}. */
    static void load(Simulated sim, CudaContext ctx) {
        sim.gpu.kernelBody("fill", l -> {
            var p = l.memory(l.pointer(0), 4L * l.i32(1));
            for (int i = 0; i < l.i32(1); i++) {
                p.setAtIndex(ValueLayout.JAVA_INT, i, l.i32(2) + i);
            }
        });
        ctx.modules().load("m", ModuleImage.ptx("fill.ptx", Ptx.module("fill", "u64", "u32", "u32")));
    }

    /** What {@code fill(p, N, base)} writes. */
    static int[] expected(int base) {
        int[] out = new int[N];
        Arrays.setAll(out, i -> base + i);
        return out;
    }

    /** {@link #N} ints no fill writes. */
    static int[] poisoned() {
        int[] p = new int[N];
        Arrays.fill(p, 0xDEADBEEF);
        return p;
    }
}
