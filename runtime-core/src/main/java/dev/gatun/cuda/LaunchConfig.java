package dev.gatun.cuda;

/**
 * How to launch a kernel: grid and block dimensions, dynamic shared memory, and optionally a
 * thread-block cluster shape (compute capability 9.0+) or a cooperative launch.
 *
 * @param clusterX cluster dimensions; 0 (all three) means no cluster
 * @param cooperative launch with {@code cuLaunchCooperativeKernel} semantics: all blocks are
 *     co-resident, so grid-wide synchronization is legal; the grid must fit the occupancy
 */
public record LaunchConfig(int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ, int sharedMemoryBytes,
        int clusterX, int clusterY, int clusterZ, boolean cooperative) {

    public LaunchConfig {
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
        return new LaunchConfig(gridX, gridY, gridZ, blockX, blockY, blockZ, bytes, clusterX, clusterY, clusterZ, cooperative);
    }

    public LaunchConfig withCluster(int x, int y, int z) {
        return new LaunchConfig(gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemoryBytes, x, y, z, cooperative);
    }

    public LaunchConfig withCooperative(boolean on) {
        return new LaunchConfig(gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemoryBytes, clusterX, clusterY, clusterZ, on);
    }

    public boolean hasCluster() {
        return clusterX != 0;
    }

    public long threadsPerBlock() {
        return (long) blockX * blockY * blockZ;
    }

    public long blocks() {
        return (long) gridX * gridY * gridZ;
    }
}
