package dev.gatun.cuda;

import java.util.function.ToIntFunction;

/**
 * The limits of one device that launch configuration depends on. Each comes from
 * {@code cuDeviceGetAttribute}; an attribute the driver fails to report, or reports as zero, is
 * replaced by a conservative value that every CUDA device since compute capability 3.0 meets,
 * so that a configuration chosen from these numbers can always launch.
 *
 * @param computeMajor compute capability, major (9 on Hopper)
 * @param computeMinor compute capability, minor
 * @param multiprocessorCount streaming multiprocessors (fallback 1)
 * @param maxThreadsPerBlock threads per block (fallback 256)
 * @param maxBlockDimX threads of a block in x (fallback 1024); each axis is limited on its own, and
 *     their product by {@code maxThreadsPerBlock}
 * @param maxBlockDimY threads of a block in y (fallback 1024)
 * @param maxBlockDimZ threads of a block in z (fallback 64)
 * @param maxGridDimX blocks in x (fallback 65535)
 * @param maxGridDimY blocks in y (fallback 65535)
 * @param maxGridDimZ blocks in z (fallback 65535)
 * @param sharedMemoryPerBlock shared memory a block gets without opting in (fallback 48 KiB)
 * @param sharedMemoryPerBlockOptIn the most a block can get after opting in, never less than
 *     {@code sharedMemoryPerBlock}
 * @param l2CacheBytes L2 size; 0 means unknown, so make no assumption about L2 residency
 * @param totalMemoryBytes device memory ({@code cuDeviceTotalMem}); 0 when unknown
 */
public record DeviceCapabilities(int computeMajor, int computeMinor, int multiprocessorCount, int maxThreadsPerBlock,
        int maxBlockDimX, int maxBlockDimY, int maxBlockDimZ, int maxGridDimX, int maxGridDimY, int maxGridDimZ,
        int sharedMemoryPerBlock, int sharedMemoryPerBlockOptIn, int l2CacheBytes, long totalMemoryBytes) {

    static final int FALLBACK_MAX_THREADS_PER_BLOCK = 256;
    static final int FALLBACK_MAX_BLOCK_DIM_XY = 1024;
    static final int FALLBACK_MAX_BLOCK_DIM_Z = 64;
    static final int FALLBACK_MAX_GRID_DIM = 65_535;
    static final int FALLBACK_SHARED_MEMORY_PER_BLOCK = 48 * 1024;


    /**
     * Builds capabilities from raw attribute readings.
     *
     * @param reported the driver's value for an attribute, or a negative number when the query failed
     */
    static DeviceCapabilities fromReported(ToIntFunction<DeviceAttribute> reported, long totalMemoryBytes) {
        int shared = positiveOr(reported.applyAsInt(DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK),
                FALLBACK_SHARED_MEMORY_PER_BLOCK);
        int optIn = Math.max(shared, positiveOr(reported.applyAsInt(DeviceAttribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN), shared));
        return new DeviceCapabilities(
                Math.max(0, reported.applyAsInt(DeviceAttribute.COMPUTE_CAPABILITY_MAJOR)),
                Math.max(0, reported.applyAsInt(DeviceAttribute.COMPUTE_CAPABILITY_MINOR)),
                positiveOr(reported.applyAsInt(DeviceAttribute.MULTIPROCESSOR_COUNT), 1),
                positiveOr(reported.applyAsInt(DeviceAttribute.MAX_THREADS_PER_BLOCK), FALLBACK_MAX_THREADS_PER_BLOCK),
                positiveOr(reported.applyAsInt(DeviceAttribute.MAX_BLOCK_DIM_X), FALLBACK_MAX_BLOCK_DIM_XY),
                positiveOr(reported.applyAsInt(DeviceAttribute.MAX_BLOCK_DIM_Y), FALLBACK_MAX_BLOCK_DIM_XY),
                positiveOr(reported.applyAsInt(DeviceAttribute.MAX_BLOCK_DIM_Z), FALLBACK_MAX_BLOCK_DIM_Z),
                positiveOr(reported.applyAsInt(DeviceAttribute.MAX_GRID_DIM_X), FALLBACK_MAX_GRID_DIM),
                positiveOr(reported.applyAsInt(DeviceAttribute.MAX_GRID_DIM_Y), FALLBACK_MAX_GRID_DIM),
                positiveOr(reported.applyAsInt(DeviceAttribute.MAX_GRID_DIM_Z), FALLBACK_MAX_GRID_DIM),
                shared,
                optIn,
                Math.max(0, reported.applyAsInt(DeviceAttribute.L2_CACHE_SIZE)),
                Math.max(0, totalMemoryBytes));
    }

    private static int positiveOr(int value, int fallback) {
        return value > 0 ? value : fallback;
    }

    /**
     * {@code "9.0"}.
     *
     * @return the compute capability as major.minor, e.g. {@code "9.0"}
     */
    public String computeCapability() {
        return computeMajor + "." + computeMinor;
    }

    /** {@return the NVRTC virtual architecture for PTX, e.g. {@code compute_90}} */
    public String ptxArchitecture() {
        return "compute_" + computeMajor + computeMinor;
    }

    /** {@return the NVRTC real architecture for CUBIN, e.g. {@code sm_90}} */
    public String cubinArchitecture() {
        return "sm_" + computeMajor + computeMinor;
    }
}
