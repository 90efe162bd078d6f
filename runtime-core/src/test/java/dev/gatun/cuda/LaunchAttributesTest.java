package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.FakeDriverApi.LaunchAttribute;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

/**
 * The launch attributes beyond clusters (programmatic stream serialization, cluster scheduling
 * policy, priority) reach cuLaunchKernelEx with their ids and values, the kernel still runs, and
 * a configuration the device or context cannot honour is refused before any driver call.
 */
class LaunchAttributesTest {

    private static final int CLUSTER = CudaDriver.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION();
    private static final int COOPERATIVE = CudaDriver.CU_LAUNCH_ATTRIBUTE_COOPERATIVE();
    private static final int PDL = CudaDriver.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION();
    private static final int POLICY = CudaDriver.CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE();
    private static final int PRIORITY = CudaDriver.CU_LAUNCH_ATTRIBUTE_PRIORITY();

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = withStoreKernel(sim);

    /** {@code sim}'s context with module "m" loaded: kernel "store" writes its int argument to its pointer. */
    private static CudaContext withStoreKernel(Simulated sim) {
        CudaContext context = sim.context();
        sim.gpu.kernelBody("store", l -> l.memory(l.pointer(0), 4).set(ValueLayout.JAVA_INT, 0, l.i32(1)));
        context.modules().load("m", ModuleImage.ptx("store.ptx", Ptx.module("store", "u64", "u32")));
        return context;
    }

    private static LaunchAttribute attribute(int id, Integer... values) {
        return new LaunchAttribute(id, List.of(values));
    }

    private static int read(DeviceBuffer b) {
        int[] out = new int[1];
        b.asInts().copyTo(out);
        return out[0];
    }

    /** Launches {@code config} (storing {@code value}) and returns the attributes the driver received. */
    private List<LaunchAttribute> launchAndRecord(LaunchConfig config, int value) {
        return launchAndRecord(sim, ctx, config, value);
    }

    private static List<LaunchAttribute> launchAndRecord(Simulated on, CudaContext context, LaunchConfig config,
            int value) {
        int before = on.gpu.extendedLaunches().size();
        try (Kernel k = context.modules().kernel("m", "store"); DeviceBuffer out = context.allocate(4)) {
            context.computeStream().fill(out.asInts(), -1);
            k.launch(context.computeStream(), config, KernelArg.pointer(out), KernelArg.i32(value));
            assertEquals(value, read(out), "the kernel body ran");
        }
        List<List<LaunchAttribute>> all = on.gpu.extendedLaunches();
        assertEquals(before + 1, all.size(), "one cuLaunchKernelEx");
        return all.get(all.size() - 1);
    }

    @Test
    void programmaticStreamSerializationIsOneAttributeSetToOne() {
        assertEquals(List.of(attribute(PDL, 1)),
                launchAndRecord(LaunchConfig.of(4, 32).withProgrammaticStreamSerialization(true), 11));
    }

    @Test
    void eachSchedulingPolicyFollowsItsCluster() {
        LaunchConfig clustered = LaunchConfig.of(8, 32).withCluster(2, 1, 1);
        assertEquals(List.of(attribute(CLUSTER, 2, 1, 1), attribute(POLICY, CudaDriver.CU_CLUSTER_SCHEDULING_POLICY_SPREAD())),
                launchAndRecord(clustered.withClusterSchedulingPolicy(ClusterSchedulingPolicy.SPREAD), 21));
        assertEquals(List.of(attribute(CLUSTER, 2, 1, 1),
                attribute(POLICY, CudaDriver.CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING())),
                launchAndRecord(clustered.withClusterSchedulingPolicy(ClusterSchedulingPolicy.LOAD_BALANCING), 22));
        assertEquals(List.of(attribute(CLUSTER, 2, 1, 1)),
                launchAndRecord(clustered.withClusterSchedulingPolicy(ClusterSchedulingPolicy.DEFAULT), 23),
                "DEFAULT is the driver's own choice: nothing is passed");
    }

    @Test
    void aPriorityAtEitherEndOfTheContextsRangeIsPassedAsGiven() {
        assertEquals(-5, ctx.greatestStreamPriority());
        assertEquals(0, ctx.leastStreamPriority());
        assertEquals(List.of(attribute(PRIORITY, -5)), launchAndRecord(LaunchConfig.of(1, 32).withPriority(-5), 31));
        assertEquals(List.of(attribute(PRIORITY, 0)), launchAndRecord(LaunchConfig.of(1, 32).withPriority(0), 32));
        assertEquals(List.of(attribute(PRIORITY, -2)), launchAndRecord(LaunchConfig.of(1, 32).withPriority(-2), 33));
    }

    @Test
    void everyAttributeAtOnceFillsAnArrayOfExactlyThatSize() {
        LaunchConfig all = LaunchConfig.of(8, 32).withCluster(4, 1, 1).withCooperative(true)
                .withProgrammaticStreamSerialization(true).withClusterSchedulingPolicy(ClusterSchedulingPolicy.SPREAD)
                .withPriority(-1);
        assertEquals(List.of(attribute(CLUSTER, 4, 1, 1), attribute(COOPERATIVE, 1), attribute(PDL, 1),
                attribute(POLICY, CudaDriver.CU_CLUSTER_SCHEDULING_POLICY_SPREAD()), attribute(PRIORITY, -1)),
                launchAndRecord(all, 41));
        assertEquals(List.of(attribute(PDL, 1), attribute(PRIORITY, -4)),
                launchAndRecord(LaunchConfig.of(2, 64).withPriority(-4).withProgrammaticStreamSerialization(true), 42));
    }

    @Test
    void onlyAConfigurationWithAttributesTakesCuLaunchKernelEx() {
        sim.faults.countCalls();
        try (Kernel k = ctx.modules().kernel("m", "store"); DeviceBuffer out = ctx.allocate(4)) {
            k.launch(ctx.computeStream(), LaunchConfig.of(1, 32).withClusterSchedulingPolicy(ClusterSchedulingPolicy.DEFAULT)
                    .withProgrammaticStreamSerialization(false), KernelArg.pointer(out), KernelArg.i32(1));
            k.launch(ctx.computeStream(), LaunchConfig.of(1, 32).withPriority(-1).withoutPriority(),
                    KernelArg.pointer(out), KernelArg.i32(2));
            assertEquals(2, sim.faults.calls("cuLaunchKernel"));
            assertEquals(0, sim.faults.calls("cuLaunchKernelEx"));
            k.launch(ctx.computeStream(), LaunchConfig.of(1, 32).withPriority(0), KernelArg.pointer(out), KernelArg.i32(3));
            assertEquals(1, sim.faults.calls("cuLaunchKernelEx"));
            assertEquals(3, read(out));
        }
    }

    @Test
    void theConfigurationIsAValueWhoseAttributesSayWhetherItIsExtended() {
        LaunchConfig plain = LaunchConfig.of(4, 32);
        assertFalse(plain.hasExtendedAttributes());
        assertTrue(plain.withProgrammaticStreamSerialization(true).hasExtendedAttributes());
        assertTrue(plain.withPriority(0).hasExtendedAttributes());
        assertTrue(plain.withClusterSchedulingPolicy(ClusterSchedulingPolicy.SPREAD).hasExtendedAttributes());
        assertTrue(plain.withCluster(1, 1, 1).hasExtendedAttributes());
        assertFalse(plain.withCooperative(true).hasExtendedAttributes(), "cooperative alone is cuLaunchCooperativeKernel");
        assertEquals(plain.withPriority(-3), LaunchConfig.of(4, 32).withPriority(-3));
        assertNotEquals(plain.withPriority(-3), plain.withPriority(-2));
        assertEquals(plain, plain.withPriority(-3).withoutPriority());
        assertEquals(OptionalInt.of(-3), plain.withPriority(-3).withSharedMemoryBytes(64).withCluster(1, 1, 1).priority(),
                "the other with... methods keep the attributes");
        assertTrue(plain.withProgrammaticStreamSerialization(true).withCooperative(true).isProgrammaticStreamSerialization());
        assertTrue(plain.withPriority(-3).toString().contains("priority=OptionalInt[-3]"), plain.withPriority(-3).toString());
        NullPointerException e = assertThrows(NullPointerException.class, () -> plain.withClusterSchedulingPolicy(null));
        assertTrue(e.getMessage().contains("ClusterSchedulingPolicy.DEFAULT"), e.getMessage());
    }

    /** Prepares once (so the kernel's limits are read), then expects {@code config} refused with no driver call at all. */
    private void refusedWithoutDriverCalls(CudaContext context, Simulated on, LaunchConfig config, String... phrases) {
        try (Kernel k = context.modules().kernel("m", "store"); DeviceBuffer out = context.allocate(4)) {
            k.prepare(LaunchConfig.of(1, 32), KernelArg.pointer(out), KernelArg.i32(0));
            on.faults.clear();
            on.faults.countCalls();
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> k.launch(context.computeStream(), config, KernelArg.pointer(out), KernelArg.i32(1)));
            for (String phrase : phrases) {
                assertTrue(e.getMessage().contains(phrase), () -> "'" + phrase + "' missing from: " + e.getMessage());
            }
            assertEquals(0, on.faults.totalCalls(), () -> "driver calls for a refused launch: " + on.faults.counts());
            on.faults.clear();
        }
        assertEquals(0, on.gpu.launches());
    }

    @Test
    void programmaticDependentLaunchNeedsComputeCapabilityNine() {
        Simulated ampere = new Simulated(new FakeDriverApi()
                .attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR(), 8));
        CudaContext context = withStoreKernel(ampere);
        refusedWithoutDriverCalls(context, ampere, LaunchConfig.of(1, 32).withProgrammaticStreamSerialization(true),
                "programmatic dependent launch", "9.0", "8.", "withProgrammaticStreamSerialization");
        // A priority alone needs no Hopper.
        assertEquals(List.of(attribute(PRIORITY, -1)),
                launchAndRecord(ampere, context, LaunchConfig.of(1, 32).withPriority(-1), 7));
    }

    @Test
    void aSchedulingPolicyWithoutAClusterIsRefused() {
        for (ClusterSchedulingPolicy policy : List.of(ClusterSchedulingPolicy.SPREAD, ClusterSchedulingPolicy.LOAD_BALANCING)) {
            refusedWithoutDriverCalls(ctx, sim, LaunchConfig.of(4, 32).withClusterSchedulingPolicy(policy),
                    policy.name(), "cluster launches only", "withCluster");
        }
    }

    @Test
    void aPriorityOutsideTheContextsRangeIsRefused() {
        refusedWithoutDriverCalls(ctx, sim, LaunchConfig.of(1, 32).withPriority(-6), "priority -6", "-5 (highest)",
                "0 (lowest)");
        refusedWithoutDriverCalls(ctx, sim, LaunchConfig.of(1, 32).withPriority(1), "priority 1", "-5 (highest)");
        refusedWithoutDriverCalls(ctx, sim, LaunchConfig.of(8, 32).withCluster(2, 1, 1).withPriority(Integer.MIN_VALUE),
                "priority " + Integer.MIN_VALUE);
    }

    @Test
    void aGraphKernelNodeCannotCarryLaunchAttributes() {
        try (Kernel k = ctx.modules().kernel("m", "store"); DeviceBuffer out = ctx.allocate(4); Graph g = ctx.createGraph()) {
            for (LaunchConfig config : List.of(LaunchConfig.of(1, 32).withProgrammaticStreamSerialization(true),
                    LaunchConfig.of(1, 32).withPriority(-1))) {
                KernelLaunch launch = k.prepare(config, KernelArg.pointer(out), KernelArg.i32(1));
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> g.addKernel(launch));
                assertTrue(e.getMessage().contains("launch attribute") && e.getMessage().contains("StreamCapture"),
                        e.getMessage());
            }
        }
    }
}
