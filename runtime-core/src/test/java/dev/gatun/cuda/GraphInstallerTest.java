package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.FakeKernel;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * {@link GraphInstaller} used directly, as a holder of several executables does (GraphSlot's
 * segments, which may be of several contexts): what it hands back to close, a spare of another
 * context, and a new executable whose preparation fails. {@link UpdatingExecutableTest} covers the
 * paths through the policy object.
 */
class GraphInstallerTest {

    private final Simulated sim = new Simulated(new FakeDriverApi().deviceCount(2));
    private final CudaContext d0 = sim.cuda.device(0).context();
    private final CudaContext d1 = sim.cuda.device(1).context();

    GraphInstallerTest() {
        sim.gpu.kernelBody("add", FakeKernel.ADD); // add(p, n, v): p[i] += v
    }

    /** A graph of {@code kernels} launches of add on a stream of {@code ctx}. */
    private static Graph graph(CudaContext ctx, Stream s, Kernel add, DeviceBuffer data, int kernels) {
        try (StreamCapture capture = s.beginCapture(CaptureMode.THREAD_LOCAL)) {
            for (int i = 0; i < kernels; i++) {
                add.launch(s, LaunchConfig.of(1, 4), KernelArg.pointer(data), KernelArg.i32(4), KernelArg.i32(1));
            }
            return capture.end();
        }
    }

    private static Kernel add(CudaContext ctx) {
        ctx.modules().load("m", ModuleImage.ptx("add.ptx", Ptx.module("add", "u64", "u32", "u32")));
        return ctx.modules().kernel("m", "add");
    }

    @Test
    void aSpareOfAnotherContextIsNotTriedButDroppedAndACountedRefusalNeedsADriverAnswer() {
        GraphInstaller installer = new GraphInstaller();
        try (Kernel add0 = add(d0); Kernel add1 = add(d1); Stream s0 = d0.createStream(); Stream s1 = d1.createStream();
                DeviceBuffer b0 = d0.allocate(16); DeviceBuffer b1 = d1.allocate(16)) {
            GraphExec first;
            GraphExec onD0;
            try (Graph one = graph(d0, s0, add0, b0, 1); Graph two = graph(d0, s0, add0, b0, 2)) {
                first = one.instantiate();
                GraphInstaller.Result r = installer.install(first, two, made -> { });
                assertEquals(UpdatingExecutable.Path.INSTANTIATED, r.path());
                assertEquals(List.of(), r.dropped(), "the first is the spare now");
                onD0 = r.current();
            }
            GraphExec second;
            try (Graph one = graph(d1, s1, add1, b1, 1); Graph two = graph(d1, s1, add1, b1, 2)) {
                second = one.instantiate();
                sim.faults.countCalls();
                GraphInstaller.Result r = installer.install(second, two, made -> { });
                assertEquals(1, sim.faults.calls("cuGraphExecUpdate_v2"), "the spare, of device 0, was not tried");
                assertEquals(UpdatingExecutable.Path.INSTANTIATED, r.path());
                assertEquals(List.of(first), r.dropped(), "the spare of another context is let go");
                assertSame(second, installer.releaseSpare());
                r.dropped().forEach(GraphExec::close);
                r.current().close();
            }
            assertEquals(new GraphInstallCounters(0, 0, 2, Map.of(GraphUpdateResult.TOPOLOGY_CHANGED, 2L), Map.of()),
                    installer.counters());
            assertNull(installer.releaseSpare());
            second.close();
            onD0.close();
        }
        d0.close();
        d1.close();
        assertEquals(List.of(), sim.gpu.violations());
        assertEquals(0, sim.gpu.liveGraphExecs());
    }

    @Test
    void aNewExecutableWhosePreparationFailsIsClosedAndTheSpareKept() {
        GraphInstaller installer = new GraphInstaller();
        try (Kernel add = add(d0); Stream s = d0.createStream(); DeviceBuffer b = d0.allocate(16);
                Graph one = graph(d0, s, add, b, 1); Graph two = graph(d0, s, add, b, 2);
                Graph three = graph(d0, s, add, b, 3)) {
            GraphExec first = one.instantiate();
            GraphExec current = installer.install(first, two, made -> { }).current();
            IllegalStateException refused = new IllegalStateException("no upload today");
            IllegalStateException thrown = assertThrows(IllegalStateException.class,
                    () -> installer.install(current, three, made -> {
                        throw refused;
                    }));
            assertSame(refused, thrown);
            assertTrue(installer.hasSpare());
            assertEquals(2, d0.diagnostics().liveOwners(OwnerKind.GRAPH_EXEC), "the current and the spare; the new one is closed");
            assertEquals(1, installer.counters().instantiations());
            assertEquals(Map.of(GraphUpdateResult.TOPOLOGY_CHANGED, 1L), installer.counters().spareRefusals());
            assertSame(first, installer.releaseSpare());
            assertFalse(installer.hasSpare());
            first.close();
            current.close();
        }
        d0.reap();
        assertEquals(0, sim.gpu.liveGraphExecs());
        d0.close();
        d1.close();
        assertEquals(List.of(), sim.gpu.violations());
    }
}
