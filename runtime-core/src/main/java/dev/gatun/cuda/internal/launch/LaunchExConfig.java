package dev.gatun.cuda.internal.launch;

import dev.gatun.cuda.ClusterSchedulingPolicy;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.bindings.driver.CUlaunchAttributeValue_union;
import dev.gatun.cuda.bindings.driver.CUlaunchAttribute_st;
import dev.gatun.cuda.bindings.driver.CUlaunchConfig_st;
import dev.gatun.cuda.bindings.driver.CudaDriver;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A native {@code CUlaunchConfig} with its launch attributes (cluster dimensions, cooperative,
 * programmatic stream serialization, cluster scheduling policy, priority, programmatic event,
 * launch completion event: each one that is set, and only those), for {@code cuLaunchKernelEx}
 * and the cluster occupancy queries. Built once; only the stream field changes per launch.
 */
public final class LaunchExConfig implements AutoCloseable {

    private final Arena arena;
    private final MemorySegment config;

    /** A config for one query (confined; close it): the launch's shape, without its events. */
    public LaunchExConfig(LaunchConfig launch) {
        this(launch, MemorySegment.NULL, MemorySegment.NULL, Arena.ofConfined());
    }

    /**
     * A config that lives as long as its owner (GC-managed).
     *
     * @param programmaticEvent the handle of {@code launch}'s programmatic event, NULL when it has none
     * @param completionEvent the handle of its launch completion event, NULL when it has none
     */
    public static LaunchExConfig retained(LaunchConfig launch, MemorySegment programmaticEvent,
            MemorySegment completionEvent) {
        return new LaunchExConfig(launch, programmaticEvent, completionEvent, Arena.ofAuto());
    }

    private LaunchExConfig(LaunchConfig launch, MemorySegment programmaticEvent, MemorySegment completionEvent,
            Arena arena) {
        this.arena = arena;
        boolean policy = launch.clusterSchedulingPolicy() != ClusterSchedulingPolicy.DEFAULT;
        boolean programmatic = programmaticEvent.address() != 0;
        boolean completion = completionEvent.address() != 0;
        int count = (launch.hasCluster() ? 1 : 0) + (launch.isCooperative() ? 1 : 0)
                + (launch.isProgrammaticStreamSerialization() ? 1 : 0) + (policy ? 1 : 0)
                + (launch.priority().isPresent() ? 1 : 0) + (programmatic ? 1 : 0) + (completion ? 1 : 0);
        // The driver reads numAttrs entries; one spare entry keeps the array non-empty when none is set.
        MemorySegment attrs = CUlaunchAttribute_st.allocateArray(Math.max(1, count), arena);
        int i = 0;
        if (launch.hasCluster()) {
            MemorySegment a = CUlaunchAttribute_st.asSlice(attrs, i++);
            CUlaunchAttribute_st.id(a, CudaDriver.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION());
            MemorySegment dims = CUlaunchAttributeValue_union.clusterDim(CUlaunchAttribute_st.value(a));
            CUlaunchAttributeValue_union.clusterDim.x(dims, launch.clusterX());
            CUlaunchAttributeValue_union.clusterDim.y(dims, launch.clusterY());
            CUlaunchAttributeValue_union.clusterDim.z(dims, launch.clusterZ());
        }
        if (launch.isCooperative()) {
            MemorySegment a = CUlaunchAttribute_st.asSlice(attrs, i++);
            CUlaunchAttribute_st.id(a, CudaDriver.CU_LAUNCH_ATTRIBUTE_COOPERATIVE());
            CUlaunchAttributeValue_union.cooperative(CUlaunchAttribute_st.value(a), 1);
        }
        if (launch.isProgrammaticStreamSerialization()) {
            MemorySegment a = CUlaunchAttribute_st.asSlice(attrs, i++);
            CUlaunchAttribute_st.id(a, CudaDriver.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION());
            CUlaunchAttributeValue_union.programmaticStreamSerializationAllowed(CUlaunchAttribute_st.value(a), 1);
        }
        if (policy) {
            MemorySegment a = CUlaunchAttribute_st.asSlice(attrs, i++);
            CUlaunchAttribute_st.id(a, CudaDriver.CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE());
            CUlaunchAttributeValue_union.clusterSchedulingPolicyPreference(CUlaunchAttribute_st.value(a),
                    driverPolicy(launch.clusterSchedulingPolicy()));
        }
        if (launch.priority().isPresent()) {
            MemorySegment a = CUlaunchAttribute_st.asSlice(attrs, i++);
            CUlaunchAttribute_st.id(a, CudaDriver.CU_LAUNCH_ATTRIBUTE_PRIORITY());
            CUlaunchAttributeValue_union.priority(CUlaunchAttribute_st.value(a), launch.priority().getAsInt());
        }
        // Record flags 0: the only other one, CU_EVENT_RECORD_EXTERNAL, is refused here by the driver.
        if (programmatic) {
            MemorySegment a = CUlaunchAttribute_st.asSlice(attrs, i++);
            CUlaunchAttribute_st.id(a, CudaDriver.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT());
            MemorySegment e = CUlaunchAttributeValue_union.programmaticEvent(CUlaunchAttribute_st.value(a));
            CUlaunchAttributeValue_union.programmaticEvent.event(e, programmaticEvent);
            CUlaunchAttributeValue_union.programmaticEvent.flags(e, 0);
            CUlaunchAttributeValue_union.programmaticEvent.triggerAtBlockStart(e, launch.isTriggerAtBlockStart() ? 1 : 0);
        }
        if (completion) {
            MemorySegment a = CUlaunchAttribute_st.asSlice(attrs, i++);
            CUlaunchAttribute_st.id(a, CudaDriver.CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT());
            MemorySegment e = CUlaunchAttributeValue_union.launchCompletionEvent(CUlaunchAttribute_st.value(a));
            CUlaunchAttributeValue_union.launchCompletionEvent.event(e, completionEvent);
            CUlaunchAttributeValue_union.launchCompletionEvent.flags(e, 0);
        }
        config = CUlaunchConfig_st.allocate(arena);
        CUlaunchConfig_st.gridDimX(config, launch.gridX());
        CUlaunchConfig_st.gridDimY(config, launch.gridY());
        CUlaunchConfig_st.gridDimZ(config, launch.gridZ());
        CUlaunchConfig_st.blockDimX(config, launch.blockX());
        CUlaunchConfig_st.blockDimY(config, launch.blockY());
        CUlaunchConfig_st.blockDimZ(config, launch.blockZ());
        CUlaunchConfig_st.sharedMemBytes(config, launch.sharedMemoryBytes());
        CUlaunchConfig_st.attrs(config, attrs);
        CUlaunchConfig_st.numAttrs(config, count);
        CUlaunchConfig_st.hStream(config, MemorySegment.NULL);
    }

    private static int driverPolicy(ClusterSchedulingPolicy policy) {
        return switch (policy) {
            case DEFAULT -> CudaDriver.CU_CLUSTER_SCHEDULING_POLICY_DEFAULT();
            case SPREAD -> CudaDriver.CU_CLUSTER_SCHEDULING_POLICY_SPREAD();
            case LOAD_BALANCING -> CudaDriver.CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING();
        };
    }

    public MemorySegment segment() {
        return config;
    }

    /** Sets the stream for the next launch (no allocation: the handle segment already exists). */
    public void setStream(MemorySegment stream) {
        CUlaunchConfig_st.hStream(config, stream);
    }

    @Override
    public void close() {
        arena.close();
    }
}
