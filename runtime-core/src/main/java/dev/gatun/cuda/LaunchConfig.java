package dev.gatun.cuda;

import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * How to launch a kernel: grid and block dimensions, dynamic shared memory, and optionally a
 * thread-block cluster shape (compute capability 9.0+), a cooperative launch, and the launch
 * attributes of {@code cuLaunchKernelEx}: programmatic stream serialization, a cluster scheduling
 * policy, a priority, a programmatic event and a launch completion event. A configuration with a
 * cluster or any of those attributes is launched through {@code cuLaunchKernelEx}
 * ({@link #hasExtendedAttributes()}).
 *
 * <p>The two events are {@link Event}s of the launch's context, created with
 * {@link CudaContext#createEvent()} (timing disabled, as the driver requires). A launch prepared
 * with one checks at every launch that it is still open, and refuses to launch once it is
 * closed; each launch counts as a use of the event on its stream, so the event is destroyed only
 * after that launch has completed.
 *
 * <p>A value (equal when every setting is), made with {@link #of}, {@link #covering} and the
 * withers; not a record, so that a new launch attribute is one more wither, not a new
 * constructor. Each accessor says what its setting means.
 */
public final class LaunchConfig {

    private final int gridX;
    private final int gridY;
    private final int gridZ;
    private final int blockX;
    private final int blockY;
    private final int blockZ;
    private final int sharedMemoryBytes;
    private final int clusterX;
    private final int clusterY;
    private final int clusterZ;
    private final boolean cooperative;
    private final boolean programmaticStreamSerialization;
    private final ClusterSchedulingPolicy clusterSchedulingPolicy;
    private final OptionalInt priority;
    private final Optional<Event> programmaticEvent;
    private final boolean triggerAtBlockStart;
    private final Optional<Event> launchCompletionEvent;


    /**
     * Checks the settings: the one check of the factories and withers, which give every option
     * a value (an empty one for none) and the trigger only with its event.
     *
     * @throws NullPointerException when the policy is null
     * @throws IllegalArgumentException when a grid or block dimension is below 1, the shared memory is negative,
     *     or the cluster dimensions are neither all 0 nor all at least 1
     */
    private LaunchConfig(int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ, int sharedMemoryBytes,
            int clusterX, int clusterY, int clusterZ, boolean cooperative, boolean programmaticStreamSerialization,
            ClusterSchedulingPolicy clusterSchedulingPolicy, OptionalInt priority, Optional<Event> programmaticEvent,
            boolean triggerAtBlockStart, Optional<Event> launchCompletionEvent) {
        Objects.requireNonNull(clusterSchedulingPolicy, "the cluster scheduling policy is null; pass "
                + "ClusterSchedulingPolicy.DEFAULT for the driver's own");
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
        this.gridX = gridX;
        this.gridY = gridY;
        this.gridZ = gridZ;
        this.blockX = blockX;
        this.blockY = blockY;
        this.blockZ = blockZ;
        this.sharedMemoryBytes = sharedMemoryBytes;
        this.clusterX = clusterX;
        this.clusterY = clusterY;
        this.clusterZ = clusterZ;
        this.cooperative = cooperative;
        this.programmaticStreamSerialization = programmaticStreamSerialization;
        this.clusterSchedulingPolicy = clusterSchedulingPolicy;
        this.priority = priority;
        this.programmaticEvent = programmaticEvent;
        this.triggerAtBlockStart = triggerAtBlockStart;
        this.launchCompletionEvent = launchCompletionEvent;
    }

    /** A configuration of a grid and a block, without shared memory, a cluster or launch attributes. */
    private static LaunchConfig plain(int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ) {
        return new LaunchConfig(gridX, gridY, gridZ, blockX, blockY, blockZ, 0, 0, 0, 0, false, false,
                ClusterSchedulingPolicy.DEFAULT, OptionalInt.empty(), Optional.empty(), false, Optional.empty());
    }

    /** {@return blocks in x} */
    public int gridX() {
        return gridX;
    }

    /** {@return blocks in y} */
    public int gridY() {
        return gridY;
    }

    /** {@return blocks in z} */
    public int gridZ() {
        return gridZ;
    }

    /** {@return threads per block in x} */
    public int blockX() {
        return blockX;
    }

    /** {@return threads per block in y} */
    public int blockY() {
        return blockY;
    }

    /** {@return threads per block in z} */
    public int blockZ() {
        return blockZ;
    }

    /** {@return dynamic shared memory per block, in bytes} */
    public int sharedMemoryBytes() {
        return sharedMemoryBytes;
    }

    /** {@return cluster dimension in x; 0 (all three) means no cluster} */
    public int clusterX() {
        return clusterX;
    }

    /** {@return cluster dimension in y; 0 with the others for no cluster} */
    public int clusterY() {
        return clusterY;
    }

    /** {@return cluster dimension in z; 0 with the others for no cluster} */
    public int clusterZ() {
        return clusterZ;
    }

    /**
     * {@return whether the launch has {@code cuLaunchCooperativeKernel} semantics: all blocks are
     * co-resident, so grid-wide synchronization is legal; the grid must fit the occupancy}
     */
    public boolean isCooperative() {
        return cooperative;
    }

    /**
     * {@return whether this is a programmatic dependent launch (compute capability 9.0+): this kernel
     * may start while the kernel before it on the stream is still running; it must call
     * {@code cudaGridDependencySynchronize()} before it reads what that kernel writes, and that
     * kernel may call {@code cudaTriggerProgrammaticLaunchCompletion()} to let it start earlier}
     */
    public boolean isProgrammaticStreamSerialization() {
        return programmaticStreamSerialization;
    }

    /** {@return where the clusters go; anything but {@code DEFAULT} needs a cluster} */
    public ClusterSchedulingPolicy clusterSchedulingPolicy() {
        return clusterSchedulingPolicy;
    }

    /**
     * {@return the launch's priority, overriding its stream's (lower numbers mean higher priority,
     * within {@link CudaContext#greatestStreamPriority()} ..
     * {@link CudaContext#leastStreamPriority()}); empty for the stream's own}
     */
    public OptionalInt priority() {
        return priority;
    }

    /**
     * {@return an event the kernel records once every block has triggered
     * ({@code cudaTriggerProgrammaticLaunchCompletion()}, PTX {@code griddepcontrol.launch_dependents})
     * or exited (compute capability 9.0+, {@code CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT}); empty for
     * none} A kernel queued on another stream after {@link Stream#waitFor(Event)} on it may start
     * then, and must call {@code cudaGridDependencySynchronize()} (PTX {@code griddepcontrol.wait})
     * before it reads what this kernel writes. On the host, a complete event means only that every
     * block has triggered, not that the kernel has finished.
     */
    public Optional<Event> programmaticEvent() {
        return programmaticEvent;
    }

    /**
     * {@return whether, with a programmatic event, each block triggers as it starts, so the event fires
     * once every block has begun (the dependent's {@code griddepcontrol.wait} still waits for this
     * kernel's completion and memory); false without one}
     */
    public boolean isTriggerAtBlockStart() {
        return triggerAtBlockStart;
    }

    /**
     * {@return an event the kernel records once all its blocks have begun
     * ({@code CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT}, driver 12.3+, any compute capability; best
     * effort: it may fire only when the kernel completes); empty for none}
     */
    public Optional<Event> launchCompletionEvent() {
        return launchCompletionEvent;
    }

    /**
     * A one-dimensional launch: {@code grid} blocks of {@code block} threads.
     *
     * @param grid blocks in x
     * @param block threads per block in x
     * @return the configuration, without shared memory or a cluster
     */
    public static LaunchConfig of(int grid, int block) {
        return plain(grid, 1, 1, block, 1, 1);
    }

    /**
     * A three-dimensional launch.
     *
     * @param gridX blocks in x
     * @param gridY blocks in y
     * @param gridZ blocks in z
     * @param blockX threads per block in x
     * @param blockY threads per block in y
     * @param blockZ threads per block in z
     * @return the configuration, without shared memory or a cluster
     */
    public static LaunchConfig of(int gridX, int gridY, int gridZ, int blockX, int blockY, int blockZ) {
        return plain(gridX, gridY, gridZ, blockX, blockY, blockZ);
    }

    /**
     * {@return enough blocks of {@code block} threads to cover {@code elements}, one thread each: a
     * one-dimensional grid of ceil(elements / block) blocks, whose kernel skips the indices past
     * the end of the last block}
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

    /**
     * {@return the same configuration with another amount of dynamic shared memory}
     *
     * @param bytes dynamic shared memory per block, in bytes
     */
    public LaunchConfig withSharedMemoryBytes(int bytes) {
        return new LaunchConfig(gridX, gridY, gridZ, blockX, blockY, blockZ, bytes, clusterX, clusterY, clusterZ,
                cooperative, programmaticStreamSerialization, clusterSchedulingPolicy, priority, programmaticEvent,
                triggerAtBlockStart, launchCompletionEvent);
    }

    /**
     * {@return the same configuration with a cluster shape (compute capability 9.0+)}
     *
     * @param x cluster dimension in x, in blocks
     * @param y cluster dimension in y
     * @param z cluster dimension in z
     */
    public LaunchConfig withCluster(int x, int y, int z) {
        return new LaunchConfig(gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemoryBytes, x, y, z, cooperative,
                programmaticStreamSerialization, clusterSchedulingPolicy, priority, programmaticEvent,
                triggerAtBlockStart, launchCompletionEvent);
    }

    /**
     * {@return the same configuration as a cooperative launch or not (see {@link #isCooperative()})}
     *
     * @param on whether all blocks must be co-resident
     */
    public LaunchConfig withCooperative(boolean on) {
        return new LaunchConfig(gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemoryBytes, clusterX, clusterY,
                clusterZ, on, programmaticStreamSerialization, clusterSchedulingPolicy, priority, programmaticEvent,
                triggerAtBlockStart, launchCompletionEvent);
    }

    /**
     * Programmatic dependent launch on or off (compute capability 9.0+): see
     * {@link #isProgrammaticStreamSerialization()} for what the kernels must do.
     *
     * @param on whether the kernel may start before the kernel ahead of it on the stream completes
     * @return the same configuration with the attribute set
     */
    public LaunchConfig withProgrammaticStreamSerialization(boolean on) {
        return new LaunchConfig(gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemoryBytes, clusterX, clusterY,
                clusterZ, cooperative, on, clusterSchedulingPolicy, priority, programmaticEvent,
                triggerAtBlockStart, launchCompletionEvent);
    }

    /**
     * Where the clusters of this (cluster) launch go; {@code DEFAULT} leaves it to the driver.
     *
     * @param policy how the driver places the clusters
     * @return the same configuration with that policy
     */
    public LaunchConfig withClusterSchedulingPolicy(ClusterSchedulingPolicy policy) {
        return new LaunchConfig(gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemoryBytes, clusterX, clusterY,
                clusterZ, cooperative, programmaticStreamSerialization, policy, priority, programmaticEvent,
                triggerAtBlockStart, launchCompletionEvent);
    }

    /**
     * This launch's priority, in place of its stream's: lower numbers mean higher priority,
     * within the context's stream priority range (checked when the launch is prepared).
     *
     * @param value the priority; lower numbers mean higher priority
     * @return the same configuration with that priority
     */
    public LaunchConfig withPriority(int value) {
        return new LaunchConfig(gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemoryBytes, clusterX, clusterY,
                clusterZ, cooperative, programmaticStreamSerialization, clusterSchedulingPolicy, OptionalInt.of(value),
                programmaticEvent, triggerAtBlockStart, launchCompletionEvent);
    }

    /** {@return the same configuration with its stream's priority} */
    public LaunchConfig withoutPriority() {
        return new LaunchConfig(gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemoryBytes, clusterX, clusterY,
                clusterZ, cooperative, programmaticStreamSerialization, clusterSchedulingPolicy, OptionalInt.empty(),
                programmaticEvent, triggerAtBlockStart, launchCompletionEvent);
    }

    /**
     * The kernel records {@code event} once every block has triggered or exited (compute
     * capability 9.0+; see {@link #programmaticEvent()}). {@code event} must be a fence event
     * ({@link CudaContext#createEvent()}) of the launch's context, checked when the launch is
     * prepared.
     *
     * @param triggerAtBlockStart each block triggers as it starts, so the event fires once every
     *     block has begun
     * @param event the event the kernel records
     * @return the same configuration with that event
     */
    public LaunchConfig withProgrammaticEvent(Event event, boolean triggerAtBlockStart) {
        Objects.requireNonNull(event, "the programmatic event is null; use withoutProgrammaticEvent() for none");
        return new LaunchConfig(gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemoryBytes, clusterX, clusterY,
                clusterZ, cooperative, programmaticStreamSerialization, clusterSchedulingPolicy, priority,
                Optional.of(event), triggerAtBlockStart, launchCompletionEvent);
    }

    /** {@return the same configuration without a programmatic event} */
    public LaunchConfig withoutProgrammaticEvent() {
        return new LaunchConfig(gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemoryBytes, clusterX, clusterY,
                clusterZ, cooperative, programmaticStreamSerialization, clusterSchedulingPolicy, priority,
                Optional.empty(), false, launchCompletionEvent);
    }

    /**
     * The kernel records {@code event} once all its blocks have begun (driver 12.3+; see
     * {@link #launchCompletionEvent()}). {@code event} must be a fence event
     * ({@link CudaContext#createEvent()}) of the launch's context, checked when the launch is
     * prepared.
     *
     * @param event the event the kernel records
     * @return the same configuration with that event
     */
    public LaunchConfig withLaunchCompletionEvent(Event event) {
        Objects.requireNonNull(event, "the launch completion event is null; use withoutLaunchCompletionEvent() for none");
        return new LaunchConfig(gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemoryBytes, clusterX, clusterY,
                clusterZ, cooperative, programmaticStreamSerialization, clusterSchedulingPolicy, priority,
                programmaticEvent, triggerAtBlockStart, Optional.of(event));
    }

    /** {@return the same configuration without a launch completion event} */
    public LaunchConfig withoutLaunchCompletionEvent() {
        return new LaunchConfig(gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemoryBytes, clusterX, clusterY,
                clusterZ, cooperative, programmaticStreamSerialization, clusterSchedulingPolicy, priority,
                programmaticEvent, triggerAtBlockStart, Optional.empty());
    }

    /** {@return whether this launch has a cluster shape} */
    public boolean hasCluster() {
        return clusterX != 0;
    }

    /**
     * {@return whether this launch needs {@code cuLaunchKernelEx}: a cluster, programmatic stream
     * serialization, a scheduling policy other than {@code DEFAULT}, a priority, or an event}
     */
    public boolean hasExtendedAttributes() {
        return hasCluster() || programmaticStreamSerialization || clusterSchedulingPolicy != ClusterSchedulingPolicy.DEFAULT
                || priority.isPresent() || programmaticEvent.isPresent() || launchCompletionEvent.isPresent();
    }

    /** {@return the threads in one block: {@code blockX * blockY * blockZ}} */
    public long threadsPerBlock() {
        return (long) blockX * blockY * blockZ;
    }

    /** {@return the blocks in the grid: {@code gridX * gridY * gridZ}} */
    public long blocks() {
        return (long) gridX * gridY * gridZ;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof LaunchConfig c && gridX == c.gridX && gridY == c.gridY && gridZ == c.gridZ
                && blockX == c.blockX && blockY == c.blockY && blockZ == c.blockZ
                && sharedMemoryBytes == c.sharedMemoryBytes && clusterX == c.clusterX && clusterY == c.clusterY
                && clusterZ == c.clusterZ && cooperative == c.cooperative
                && programmaticStreamSerialization == c.programmaticStreamSerialization
                && clusterSchedulingPolicy == c.clusterSchedulingPolicy && priority.equals(c.priority)
                && programmaticEvent.equals(c.programmaticEvent) && triggerAtBlockStart == c.triggerAtBlockStart
                && launchCompletionEvent.equals(c.launchCompletionEvent);
    }

    @Override
    public int hashCode() {
        return Objects.hash(gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemoryBytes, clusterX, clusterY,
                clusterZ, cooperative, programmaticStreamSerialization, clusterSchedulingPolicy, priority,
                programmaticEvent, triggerAtBlockStart, launchCompletionEvent);
    }

    /** {@return the settings, as a record would print them} */
    @Override
    public String toString() {
        return "LaunchConfig[gridX=" + gridX + ", gridY=" + gridY + ", gridZ=" + gridZ + ", blockX=" + blockX
                + ", blockY=" + blockY + ", blockZ=" + blockZ + ", sharedMemoryBytes=" + sharedMemoryBytes
                + ", clusterX=" + clusterX + ", clusterY=" + clusterY + ", clusterZ=" + clusterZ + ", cooperative="
                + cooperative + ", programmaticStreamSerialization=" + programmaticStreamSerialization
                + ", clusterSchedulingPolicy=" + clusterSchedulingPolicy + ", priority=" + priority
                + ", programmaticEvent=" + programmaticEvent + ", triggerAtBlockStart=" + triggerAtBlockStart
                + ", launchCompletionEvent=" + launchCompletionEvent + "]";
    }
}
