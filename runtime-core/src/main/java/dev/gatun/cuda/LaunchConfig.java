package dev.gatun.cuda;

import java.util.Objects;
import java.util.OptionalInt;

/**
 * How to launch a kernel: grid and block dimensions, dynamic shared memory, and optionally a
 * thread-block cluster shape (compute capability 9.0+), a cooperative launch, and the launch
 * attributes of {@code cuLaunchKernelEx}: programmatic stream serialization, a cluster scheduling
 * policy and a priority. A configuration with a cluster or any of those attributes is launched
 * through {@code cuLaunchKernelEx} ({@link #hasExtendedAttributes()}).
 *
 * @param clusterX cluster dimensions; 0 (all three) means no cluster
 * @param cooperative launch with {@code cuLaunchCooperativeKernel} semantics: all blocks are
 *     co-resident, so grid-wide synchronization is legal; the grid must fit the occupancy
 * @param programmaticStreamSerialization programmatic dependent launch (compute capability
 *     9.0+): this kernel may start while the kernel before it on the stream is still running;
 *     it must call {@code cudaGridDependencySynchronize()} before it reads what that kernel
 *     writes, and that kernel may call {@code cudaTriggerProgrammaticLaunchCompletion()} to let
 *     it start earlier
 * @param clusterSchedulingPolicy where the clusters go; anything but {@code DEFAULT} needs a cluster
 * @param priority the launch's priority, overriding its stream's (lower numbers mean higher
 *     priority, within {@link CudaContext#greatestStreamPriority()} ..
 *     {@link CudaContext#leastStreamPriority()}); empty for the stream's own
 */
public record LaunchConfig(int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ, int sharedMemoryBytes,
        int clusterX, int clusterY, int clusterZ, boolean cooperative, boolean programmaticStreamSerialization,
        ClusterSchedulingPolicy clusterSchedulingPolicy, OptionalInt priority) {

    public LaunchConfig {
        Objects.requireNonNull(clusterSchedulingPolicy, "the cluster scheduling policy is null; pass "
                + "ClusterSchedulingPolicy.DEFAULT for the driver's own");
        Objects.requireNonNull(priority, "the priority is null; pass OptionalInt.empty() for the stream's own");
        if (gridX < 1 || gridY < 1 || gridZ < 1 || blockX < 1 || blockY < 1 || blockZ < 1) {
            throw new IllegalArgumentException("grid and block dimensions must be at least 1: grid (" + gridX + ", " + gridY
                    + ", " + gridZ + "), block (" + blockX + ", " + blockY + ", " + blockZ + ")");
        }
        if (sharedMemoryBytes < 0) {
            throw new IllegalArgumentException("dynamic shared memory cannot be negative: " + sharedMemoryBytes);
        }
        boolean anyCluster = clusterX != 0 || clusterY != 0 || clusterZ != 0;
        if (anyCluster && (clusterX < 1 || clusterY < 1 || clusterZ < 1)) {
            throw new IllegalArgumentException("cluster dimensions must all be at least 1, or all 0 for no cluster: ("
                    + clusterX + ", " + clusterY + ", " + clusterZ + ")");
        }
    }

    /** A configuration without launch attributes, as the record had before it gained them. */
    public LaunchConfig(int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ, int sharedMemoryBytes,
            int clusterX, int clusterY, int clusterZ, boolean cooperative) {
        this(gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemoryBytes, clusterX, clusterY, clusterZ, cooperative,
                false, ClusterSchedulingPolicy.DEFAULT, OptionalInt.empty());
    }

    /** A one-dimensional launch: {@code grid} blocks of {@code block} threads. */
    public static LaunchConfig of(int grid, int block) {
        return new LaunchConfig(grid, 1, 1, block, 1, 1, 0, 0, 0, 0, false);
    }

    /** A three-dimensional launch. */
    public static LaunchConfig of(int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ) {
        return new LaunchConfig(gridX, gridY, gridZ, blockX, blockY, blockZ, 0, 0, 0, 0, false);
    }

    /**
     * Enough blocks of {@code block} threads to cover {@code elements}, one thread each: a
     * one-dimensional grid of ceil(elements / block) blocks, whose kernel skips the indices past
     * the end of the last block.
     *
     * <p>Zero elements are refused rather than rounded up to one block: a grid cannot be empty,
     * and a block over no elements would only run threads that must all do nothing (or, in a
     * kernel without a bounds check, write out of range). Skip the launch when there is nothing
     * to do.
     *
     * @param elements how many elements, at least 1
     * @param block threads per block, at least 1 (and at most what the device and kernel allow:
     *     1024 on current GPUs, checked when the launch is prepared)
     * @throws IllegalArgumentException when {@code elements} or {@code block} is less than 1, or the
     *     grid would need more than 2^31-1 blocks
     */
    public static LaunchConfig covering(long elements, int block) {
        if (block < 1) {
            String call = "LaunchConfig.covering(" + elements + ", " + block + ")";
            throw new IllegalArgumentException(call + ": the block must have at least 1 thread (at most the kernel's "
                    + "max threads per block, 1024 on current GPUs; 128 or 256 are usual)");
        }
        if (elements < 1) {
            String call = "LaunchConfig.covering(" + elements + ", " + block + ")";
            throw new IllegalArgumentException(call + (elements == 0
                    ? ": there are no elements to cover and a grid cannot be empty; skip the launch when there is "
                            + "nothing to do"
                    : ": the element count cannot be negative"));
        }
        long grid = elements / block + (elements % block == 0 ? 0 : 1); // no overflow, unlike (elements + block - 1)
        if (grid > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("LaunchConfig.covering(" + elements + ", " + block + "): " + grid
                    + " blocks would be needed, more than the 2^31-1 a "
                    + "grid holds in x; use larger blocks, or a grid-stride loop over fewer blocks");
        }
        return of((int) grid, block);
    }

    public LaunchConfig withSharedMemory(int bytes) {
        return new LaunchConfig(gridX, gridY, gridZ, blockX, blockY, blockZ, bytes, clusterX, clusterY, clusterZ,
                cooperative, programmaticStreamSerialization, clusterSchedulingPolicy, priority);
    }

    public LaunchConfig withCluster(int x, int y, int z) {
        return new LaunchConfig(gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemoryBytes, x, y, z, cooperative,
                programmaticStreamSerialization, clusterSchedulingPolicy, priority);
    }

    public LaunchConfig withCooperative(boolean on) {
        return new LaunchConfig(gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemoryBytes, clusterX, clusterY,
                clusterZ, on, programmaticStreamSerialization, clusterSchedulingPolicy, priority);
    }

    /**
     * Programmatic dependent launch on or off (compute capability 9.0+): see
     * {@link #programmaticStreamSerialization()} for what the kernels must do.
     */
    public LaunchConfig withProgrammaticStreamSerialization(boolean on) {
        return new LaunchConfig(gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemoryBytes, clusterX, clusterY,
                clusterZ, cooperative, on, clusterSchedulingPolicy, priority);
    }

    /** Where the clusters of this (cluster) launch go; {@code DEFAULT} leaves it to the driver. */
    public LaunchConfig withClusterSchedulingPolicy(ClusterSchedulingPolicy policy) {
        return new LaunchConfig(gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemoryBytes, clusterX, clusterY,
                clusterZ, cooperative, programmaticStreamSerialization, policy, priority);
    }

    /**
     * This launch's priority, in place of its stream's: lower numbers mean higher priority,
     * within the context's stream priority range (checked when the launch is prepared).
     */
    public LaunchConfig withPriority(int value) {
        return new LaunchConfig(gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemoryBytes, clusterX, clusterY,
                clusterZ, cooperative, programmaticStreamSerialization, clusterSchedulingPolicy, OptionalInt.of(value));
    }

    /** The same configuration with its stream's priority. */
    public LaunchConfig withoutPriority() {
        return new LaunchConfig(gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemoryBytes, clusterX, clusterY,
                clusterZ, cooperative, programmaticStreamSerialization, clusterSchedulingPolicy, OptionalInt.empty());
    }

    public boolean hasCluster() {
        return clusterX != 0;
    }

    /**
     * Whether this launch needs {@code cuLaunchKernelEx}: a cluster, programmatic stream
     * serialization, a scheduling policy other than {@code DEFAULT}, or a priority.
     */
    public boolean hasExtendedAttributes() {
        return hasCluster() || programmaticStreamSerialization || clusterSchedulingPolicy != ClusterSchedulingPolicy.DEFAULT
                || priority.isPresent();
    }

    public long threadsPerBlock() {
        return (long) blockX * blockY * blockZ;
    }

    public long blocks() {
        return (long) gridX * gridY * gridZ;
    }
}
