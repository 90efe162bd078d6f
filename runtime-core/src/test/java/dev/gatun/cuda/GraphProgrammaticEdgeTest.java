package dev.gatun.cuda;

import static dev.gatun.cuda.AddKernelFixture.filled;
import static dev.gatun.cuda.AddKernelFixture.read;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.Simulated;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Programmatic dependencies between kernel nodes of a graph built by hand, on the simulated
 * driver: the edge reaches the driver with its type and port and orders the consumer after the
 * producer; misuse, an old driver and an old device are refused before any driver call.
 */
class GraphProgrammaticEdgeTest {

    private static final int N = AddKernelFixture.N;

    private final AddKernelFixture fixture = new AddKernelFixture(new FakeDriverApi());
    private final Simulated sim = fixture.sim;
    private final CudaContext ctx = fixture.ctx;
    private final Stream stream = fixture.stream;

    @AfterEach
    void nothingLeftOrMisused() {
        fixture.close();
    }

    @Test
    void aProgrammaticEdgeReachesTheDriverWithItsPortAndOrdersTheConsumer() {
        try (DeviceBuffer a = ctx.allocate(4 * N); Graph g = ctx.createGraph()) {
            GraphNode fill = g.addFill(a.asInts(), 3);
            GraphNode producer = g.addKernel(fixture.launch(a, 1), fill);
            GraphNode consumer = g.addKernel(fixture.launch(a, 100), fill); // no ordinary edge from the producer
            GraphNode late = g.addKernel(fixture.launch(a, 1000), fill);
            g.addProgrammaticDependency(producer, consumer);
            g.addLaunchOrderDependency(consumer, late);
            List<int[]> edges = sim.gpu.programmaticEdges();
            assertEquals(2, edges.size());
            assertArrayEquals(new int[] {1, 2, CudaDriver.CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC()}, edges.get(0));
            assertArrayEquals(new int[] {2, 3, CudaDriver.CU_GRAPH_KERNEL_NODE_PORT_LAUNCH_ORDER()}, edges.get(1));
            try (GraphExec exec = g.instantiate()) {
                exec.launch(stream);
                stream.synchronize();
            }
            assertArrayEquals(filled(3 + 1 + 100 + 1000), read(a), "each kernel ran after the fill");
            assertThrows(CudaException.class, () -> g.addProgrammaticDependency(producer, consumer),
                    "the driver refuses a second edge between the same nodes");
        }
    }

    @Test
    void misuseIsRefusedBeforeAnyDriverCall() {
        try (DeviceBuffer a = ctx.allocate(4 * N); Graph g = ctx.createGraph(); Graph other = ctx.createGraph()) {
            GraphNode k1 = g.addKernel(fixture.launch(a, 1));
            GraphNode k2 = g.addKernel(fixture.launch(a, 2));
            GraphNode fill = g.addFill(a.asInts(), 0);
            GraphNode foreign = other.addKernel(fixture.launch(a, 3));
            GraphNode removed = g.addKernel(fixture.launch(a, 4));
            g.remove(removed);
            sim.faults.countCalls();
            assertThrows(IllegalArgumentException.class, () -> g.addProgrammaticDependency(k1, k1));
            assertThrows(IllegalArgumentException.class, () -> g.addProgrammaticDependency(fill, k2));
            assertThrows(IllegalArgumentException.class, () -> g.addProgrammaticDependency(k1, foreign));
            assertThrows(IllegalArgumentException.class, () -> g.addLaunchOrderDependency(removed, k2));
            assertThrows(NullPointerException.class, () -> g.addProgrammaticDependency(k1, null));
            assertEquals(0, sim.faults.totalCalls(), "no driver call");
        }
    }

    @Test
    void aDriverOlderThan12Point3IsRefusedBeforeAnyDriverCall() {
        refusedOn(new FakeDriverApi().version(12020), DriverTooOldException.class);
    }

    @Test
    void aDeviceOlderThanComputeCapability9IsRefusedBeforeAnyDriverCall() {
        refusedOn(new FakeDriverApi().attribute(CudaDriver.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR(), 8),
                IllegalArgumentException.class);
    }

    private static void refusedOn(FakeDriverApi gpu, Class<? extends RuntimeException> refusal) {
        try (AddKernelFixture old = new AddKernelFixture(gpu)) {
            try (DeviceBuffer a = old.ctx.allocate(4 * N); Graph g = old.ctx.createGraph()) {
                GraphNode p = g.addKernel(old.launch(a, 1));
                GraphNode q = g.addKernel(old.launch(a, 2));
                old.sim.faults.countCalls();
                assertThrows(refusal, () -> g.addProgrammaticDependency(p, q));
                assertEquals(0, old.sim.faults.calls("cuGraphAddDependencies_v2"));
            }
        }
    }
}
