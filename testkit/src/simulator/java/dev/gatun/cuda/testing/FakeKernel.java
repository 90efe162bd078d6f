package dev.gatun.cuda.testing;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** The body of a simulated kernel: what a launch does to device memory when its stream runs it. */
@FunctionalInterface
public interface FakeKernel {

    /** {@code add(p, n, v)}: {@code p[i] += v} for the {@code n} ints at {@code p}; the tests' usual kernel. */
    FakeKernel ADD = l -> {
        MemorySegment p = l.memory(l.pointer(0), 4L * l.i32(1));
        for (int i = 0; i < l.i32(1); i++) {
            p.setAtIndex(ValueLayout.JAVA_INT, i, p.getAtIndex(ValueLayout.JAVA_INT, i) + l.i32(2));
        }
    };

    /**
     * {@code step(p, n, v, counter, handle)}: {@link #ADD}'s {@code p[i] += v}, then {@code --*counter}, and
     * the conditional handle takes {@code counter != 0}: one round of a WHILE loop that counts down.
     */
    FakeKernel STEP = l -> {
        ADD.run(l);
        MemorySegment counter = l.memory(l.pointer(3), 4);
        int left = counter.get(ValueLayout.JAVA_INT, 0) - 1;
        counter.set(ValueLayout.JAVA_INT, 0, left);
        l.setConditional(l.i64(4), left != 0 ? 1 : 0);
    };

    /** {@code decide(flag, handle)}: the conditional handle takes {@code *flag}. */
    FakeKernel DECIDE = l -> l.setConditional(l.i64(1), l.memory(l.pointer(0), 4).get(ValueLayout.JAVA_INT, 0));

    void run(Launch launch);

    /** One launch as the simulated GPU sees it: dimensions, raw argument bytes, device memory. */
    interface Launch {
        int gridX();

        int blockX();

        int sharedMemoryBytes();

        /** Argument {@code i} read as a device pointer (8 bytes). */
        long pointer(int i);

        int i32(int i);

        long i64(int i);

        float f32(int i);

        double f64(int i);

        /** Device memory at a device address, as the kernel would see it. */
        MemorySegment memory(long address, long bytes);

        /** Sets a conditional handle's value, as {@code cudaGraphSetConditional} does. */
        void setConditional(long handle, int value);
    }
}
