package dev.gatun.cuda;

import dev.gatun.cuda.bindings.driver.CudaDriver;

/** How a device may access a {@link MemoryPool}'s memory ({@code CU_MEM_ACCESS_FLAGS_PROT_*}). */
public enum MemoryAccess {
    /** No access: the device's kernels and copies must not touch the memory. */
    NONE(CudaDriver.CU_MEM_ACCESS_FLAGS_PROT_NONE()),
    /** Read-only access. */
    READ(CudaDriver.CU_MEM_ACCESS_FLAGS_PROT_READ()),
    /** Read and write access (the pool's own device always has it). */
    READ_WRITE(CudaDriver.CU_MEM_ACCESS_FLAGS_PROT_READWRITE());

    final int flags;

    MemoryAccess(int flags) {
        this.flags = flags;
    }

    /** The access the driver's flags mean. */
    static MemoryAccess of(int flags) {
        for (MemoryAccess a : values()) {
            if (a.flags == flags) {
                return a;
            }
        }
        throw new IllegalStateException("the driver reported memory access flags " + flags
                + ", which this Gatun does not know; update Gatun");
    }
}
