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
