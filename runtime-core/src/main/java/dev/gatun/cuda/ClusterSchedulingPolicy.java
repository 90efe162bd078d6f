package dev.gatun.cuda;

/**
 * How the hardware places the clusters of a cluster launch on the GPU
 * ({@code CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE}); a preference the driver may
 * ignore, and meaningful only with {@link LaunchConfig#withCluster}.
 */
public enum ClusterSchedulingPolicy {
    /** The driver's own choice; nothing is passed to the driver. */
    DEFAULT,
    /** Spread the clusters over the GPU's processing clusters. */
    SPREAD,
    /** Let the hardware balance the clusters by load. */
    LOAD_BALANCING
}
