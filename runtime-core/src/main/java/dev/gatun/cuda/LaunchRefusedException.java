package dev.gatun.cuda;

/**
 * The driver refused a kernel launch that Gatun's own checks let through: a result that is not
 * sticky, such as {@code CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES} (the block needs more registers
 * than a multiprocessor has) or {@code CUDA_ERROR_INVALID_VALUE}. It is a {@link CudaException}
 * with the driver's result, so code that catches that keeps working, and its message adds what
 * a person needs to see why: the kernel's {@linkplain #attributes() attributes} (registers per
 * thread, static shared memory, the most threads per block it allows, its dynamic shared memory
 * ceiling), the launch's {@linkplain #config() configuration}, and the driver's occupancy verdict
 * for that block ({@link #blocksPerMultiprocessor()}: how many blocks of this size fit on one
 * multiprocessor; 0 means none can run anywhere).
 *
 * <p>What to do: with no block that fits, use fewer threads per block, less dynamic shared
 * memory, or fewer registers per thread ({@code __launch_bounds__}, {@code -maxrregcount});
 * with blocks that fit, the refusal is about the grid, the cluster or a launch attribute. A
 * refused launch may still have queued work: launch again once its stream is idle.
 */
public final class LaunchRefusedException extends CudaException {
    private static final long serialVersionUID = 1L;

    /** {@link #blocksPerMultiprocessor()} when the driver could not say. */
    public static final int UNKNOWN = -1;

    /** The refused kernel's attributes, as the driver reported them. */
    private final transient KernelAttributes attributes;
    /** The refused launch's configuration. */
    private final transient LaunchConfig config;
    /** Blocks of the launch's size that fit on one multiprocessor, or {@link #UNKNOWN}. */
    private final int blocksPerMultiprocessor;

    /**
     * Restates a refused launch with what explains it.
     *
     * @param refusal the driver's refusal, kept as the cause
     * @param attributes the kernel's attributes
     * @param config the launch's configuration
     * @param blocksPerMultiprocessor the driver's occupancy for the launch's block, or {@link #UNKNOWN}
     */
    public LaunchRefusedException(CudaException refusal, KernelAttributes attributes, LaunchConfig config,
            int blocksPerMultiprocessor) {
        super(refusal.result(), refusal.resultName(), refusal.description(), refusal.operation(),
                refusal.device().orElse(-1), refusal.driverLog(), refusal);
        this.attributes = attributes;
        this.config = config;
        this.blocksPerMultiprocessor = blocksPerMultiprocessor;
    }

    /** {@return the refused kernel's attributes, as the driver reported them} */
    public KernelAttributes attributes() {
        return attributes;
    }

    /** {@return the refused launch's configuration} */
    public LaunchConfig config() {
        return config;
    }

    /** {@return how many blocks of the launch's size fit on one multiprocessor (0: none), or {@link #UNKNOWN}} */
    public int blocksPerMultiprocessor() {
        return blocksPerMultiprocessor;
    }

    @Override
    public String getMessage() {
        if (attributes == null || config == null) {
            return super.getMessage(); // deserialized: the diagnosis did not travel
        }
        int threads = config.blockX() * config.blockY() * config.blockZ();
        StringBuilder sb = new StringBuilder(super.getMessage())
                .append(". The kernel: ").append(attributes.registersPerThread()).append(" registers per thread, ")
                .append(attributes.staticSharedBytes()).append(" bytes of static shared memory, at most ")
                .append(attributes.maxThreadsPerBlock()).append(" threads per block, dynamic shared memory up to ")
                .append(attributes.maxDynamicSharedBytes()).append(" bytes. The launch: grid (").append(config.gridX())
                .append(", ").append(config.gridY()).append(", ").append(config.gridZ()).append("), block (")
                .append(config.blockX()).append(", ").append(config.blockY()).append(", ").append(config.blockZ())
                .append(") = ").append(threads).append(" threads, ").append(config.sharedMemoryBytes())
                .append(" bytes of dynamic shared memory");
        if (config.clusterX() != 0) {
            sb.append(", cluster (").append(config.clusterX()).append(", ").append(config.clusterY()).append(", ")
                    .append(config.clusterZ()).append(')');
        }
        if (config.isCooperative()) {
            sb.append(", cooperative");
        }
        if (config.isProgrammaticStreamSerialization()) {
            sb.append(", programmatic stream serialization");
        }
        config.priority().ifPresent(p -> sb.append(", priority ").append(p));
        if (config.programmaticEvent().isPresent()) {
            sb.append(", a programmatic event");
        }
        if (config.launchCompletionEvent().isPresent()) {
            sb.append(", a launch completion event");
        }
        sb.append(". ").append(verdict(threads));
        return sb.toString();
    }

    private String verdict(int threads) {
        if (threads > attributes.maxThreadsPerBlock()) {
            return "The block has more threads than this kernel allows (" + attributes.maxThreadsPerBlock()
                    + ", limited by its registers): use at most that many, or fewer registers per thread "
                    + "(__launch_bounds__, -maxrregcount)";
        }
        if (blocksPerMultiprocessor == 0) {
            return "No block of this size fits on a multiprocessor: use fewer threads per block, less dynamic shared "
                    + "memory, or fewer registers per thread (__launch_bounds__, -maxrregcount)";
        }
        if (blocksPerMultiprocessor == UNKNOWN) {
            return "The driver could not say how many blocks of this size fit on a multiprocessor";
        }
        return blocksPerMultiprocessor + " block(s) of this size fit on a multiprocessor, so the refusal is about "
                + "something else: the grid, the cluster or a launch attribute";
    }
}
