package dev.gatun.testkit;

import java.lang.foreign.MemorySegment;

/**
 * A kernel's body in Java: what one launch of the kernel does to device memory when the
 * simulated GPU runs it, in stream order (after the work its stream waits for, before the work
 * queued after it). It runs once per launch, on whichever thread makes the simulated GPU run the
 * work, not once per GPU thread: a body loops over the elements itself. Write it to compute what
 * the kernel's CUDA source says, so that the same test passes on both targets. A body that throws
 * is work that failed on the GPU: the simulator records it, the launch's caller sees nothing (as
 * on a GPU, where a kernel's fault is not the launch call's), and
 * {@link GpuUnderTest#close()} reports it.
 *
 * <pre>{@code
 * JavaKernel scale = launch -> {                       // scale(float* y, const float* x, float a, int n)
 *     int n = launch.i32(3);
 *     MemorySegment y = launch.buffer(0, 4L * n);
 *     MemorySegment x = launch.buffer(1, 4L * n);
 *     for (int i = 0; i < n; i++) {
 *         y.setAtIndex(ValueLayout.JAVA_FLOAT, i, launch.f32(2) * x.getAtIndex(ValueLayout.JAVA_FLOAT, i));
 *     }
 * };
 * }</pre>
 */
@FunctionalInterface
public interface JavaKernel {

    /**
     * Runs one launch.
     *
     * @param launch the launch's dimensions, arguments and device memory
     */
    void run(Launch launch);

    /**
     * One launch as the simulated GPU sees it. Arguments are read by index, as the kernel's
     * parameters are declared; reading one with a type of another size reads its bytes widened
     * or truncated, as a C cast of the raw value would.
     */
    interface Launch {

        /** {@return the grid's x dimension, in blocks (the simulator keeps y and z, but does not pass them to a body)} */
        int gridX();

        /** {@return the block's x dimension, in threads} */
        int blockX();

        /** {@return the dynamic shared memory the launch asked for, in bytes} */
        int sharedMemoryBytes();

        /**
         * {@return argument {@code index} as a device address (a pointer parameter)}
         *
         * @param index the parameter's position, from 0
         */
        long pointer(int index);

        /**
         * {@return argument {@code index} as a 32-bit integer ({@code int}, {@code unsigned})}
         *
         * @param index the parameter's position, from 0
         */
        int i32(int index);

        /**
         * {@return argument {@code index} as a 64-bit integer ({@code long long}, {@code size_t})}
         *
         * @param index the parameter's position, from 0
         */
        long i64(int index);

        /**
         * {@return argument {@code index} as a {@code float}}
         *
         * @param index the parameter's position, from 0
         */
        float f32(int index);

        /**
         * {@return argument {@code index} as a {@code double}}
         *
         * @param index the parameter's position, from 0
         */
        double f64(int index);

        /**
         * Device memory at a device address, as the kernel would see it.
         *
         * @param address a device address inside an allocation
         * @param bytes how many bytes from there
         * @return the memory, readable and writable
         * @throws IllegalStateException when the range is not inside allocated device memory: the
         *     simulated counterpart of an illegal address (see the class comment for what becomes of it)
         */
        MemorySegment memory(long address, long bytes);

        /**
         * The device memory a pointer argument points at.
         *
         * @param index the pointer parameter's position, from 0
         * @param bytes how many bytes from where it points
         * @return {@code memory(pointer(index), bytes)}
         * @throws IllegalStateException as {@link #memory} does
         */
        default MemorySegment buffer(int index, long bytes) {
            return memory(pointer(index), bytes);
        }
    }
}
