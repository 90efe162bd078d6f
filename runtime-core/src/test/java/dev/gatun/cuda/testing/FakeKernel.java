package dev.gatun.cuda.testing;

import java.lang.foreign.MemorySegment;

/** The body of a simulated kernel: what a launch does to device memory when its stream runs it. */
@FunctionalInterface
public interface FakeKernel {

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
