package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.testing.FakeKernel;
import dev.gatun.cuda.testing.FlightRecording;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The update-or-instantiate policy on the simulated driver, whose update refuses a changed node
 * count (TOPOLOGY_CHANGED) and a node of another type at the same place (NODE_TYPE_CHANGED, naming
 * both nodes), as the driver does.
 */
class UpdatingExecutableTest {

    private static final int N = 64;

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();
    private final Stream stream = ctx.createStream();
    private final DeviceBuffer data = ctx.allocate(4L * N);
    private final Kernel add;

    UpdatingExecutableTest() {
        sim.gpu.kernelBody("add", FakeKernel.ADD); // add(p, n, v): p[i] += v
        ctx.modules().load("m", ModuleImage.ptx("add.ptx", Ptx.module("add", "u64", "u32", "u32")));
        add = ctx.modules().kernel("m", "add");
    }

    @AfterEach
    void nothingLeftOrMisused() {
        add.close();
        data.close();
        stream.close();
        ctx.close(); // refuses while an executable is open
        assertEquals(List.of(), sim.gpu.violations());
    }

    private void addOn(Stream s, int v) {
        add.launch(s, LaunchConfig.of(1, N), KernelArg.pointer(data), KernelArg.i32(N), KernelArg.i32(v));
    }

    private Graph capture(Consumer<Stream> work) {
        try (StreamCapture capture = stream.beginCapture(CaptureMode.THREAD_LOCAL)) {
            work.accept(stream);
            return capture.end();
        }
    }

    /** One kernel adding {@code v}. */
    private Graph one(int v) {
        return capture(s -> addOn(s, v));
    }

    /** Two kernels adding {@code v} and 100. */
    private Graph two(int v) {
        return capture(s -> {
            addOn(s, v);
            addOn(s, 100);
        });
    }

    /** Launches {@code exec} over zeros and returns what it computed. */
    private int run(UpdatingExecutable exec) {
        data.asInts().copyFrom(new int[N]);
        exec.launch(stream);
        int[] out = new int[N];
        Arrays.fill(out, 0x7fc00000);
        data.asInts().copyTo(out);
        int first = out[0];
        for (int x : out) {
            assertEquals(first, x);
        }
        return first;
    }

    @Test
    void theSameTopologyIsUpdatedInPlace() {
        try (Graph a = one(1); UpdatingExecutable exec = UpdatingExecutable.instantiate(a)) {
            GraphExec first = exec.current();
            try (Graph b = one(7)) {
                assertEquals(new UpdatingExecutable.Install(UpdatingExecutable.Path.UPDATED, null), exec.install(b));
            }
            assertSame(first, exec.current());
            assertEquals(7, run(exec));
            assertEquals(new GraphInstallCounters(1, 0, 1, Map.of(), Map.of()), exec.counters());
            assertFalse(exec.hasSpare());
        }
    }

    @Test
    void twoAlternatingShapesSettleIntoSpareUpdatesAfterTwoInstantiations() {
        try (Graph a = one(1); UpdatingExecutable exec = UpdatingExecutable.instantiate(a)) {
            try (Graph b = two(2)) {
                UpdatingExecutable.Install i = exec.install(b);
                assertEquals(UpdatingExecutable.Path.INSTANTIATED, i.path());
                assertEquals(GraphUpdateResult.TOPOLOGY_CHANGED, i.refusal().result());
                assertNull(i.refusal().errorNode(), "the driver names no node for a changed topology");
            }
            assertEquals(102, run(exec));
            assertTrue(exec.hasSpare());
            for (int round = 0; round < 3; round++) {
                try (Graph a2 = one(3 + round)) {
                    assertEquals(UpdatingExecutable.Path.SPARE, exec.install(a2).path());
                }
                assertEquals(3 + round, run(exec));
                try (Graph b2 = two(10 + round)) {
                    assertEquals(UpdatingExecutable.Path.SPARE, exec.install(b2).path());
                }
                assertEquals(110 + round, run(exec));
            }
            assertEquals(new GraphInstallCounters(0, 6, 2, Map.of(GraphUpdateResult.TOPOLOGY_CHANGED, 7L), Map.of()),
                    exec.counters());
        }
        assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.GRAPH_EXEC), "the current and the spare are closed");
    }

    @Test
    void aThirdShapeInstantiatesAndReplacesTheSpare() {
        try (Graph a = one(1); UpdatingExecutable exec = UpdatingExecutable.instantiate(a)) {
            try (Graph b = two(2)) {
                exec.install(b);
            }
            try (Graph c = capture(s -> {
                addOn(s, 1);
                addOn(s, 2);
                addOn(s, 3);
            })) {
                assertEquals(UpdatingExecutable.Path.INSTANTIATED, exec.install(c).path());
            }
            assertEquals(6, run(exec));
            ctx.reap();
            assertEquals(2, ctx.diagnostics().liveOwners(OwnerKind.GRAPH_EXEC), "the current and one spare: the first is closed");
            assertEquals(Map.of(GraphUpdateResult.TOPOLOGY_CHANGED, 1L), exec.counters().spareRefusals());
        }
    }

    @Test
    void aNodeOfAnotherTypeIsNamedWithTheNodeItWasComparedWith() {
        try (Graph a = capture(s -> {
            addOn(s, 1);
            s.memset(data.bytes(), (byte) 0);
        }); GraphExec exec = a.instantiate(); Graph b = capture(s -> {
            s.memset(data.bytes(), (byte) 0);
            addOn(s, 1);
        })) {
            GraphUpdateReport report = exec.tryUpdateExplained(b);
            assertEquals(GraphUpdateResult.NODE_TYPE_CHANGED, report.result());
            // The simulated driver tells only kernel, event and conditional nodes apart: a memset is "empty" there.
            assertTrue(report.errorNode().startsWith("empty node 0 of the new graph"), report.errorNode());
            assertTrue(report.errorFromNode().startsWith("kernel node 0 of the executable's graph"),
                    report.errorFromNode());
            assertEquals(GraphUpdateResult.NODE_TYPE_CHANGED, exec.tryUpdate(b));
        }
    }

    @Test
    void aNodeTheDriverCannotDescribeIsNamedByItsHandleAndTheResultStays() {
        try (Graph a = capture(s -> {
            addOn(s, 1);
            s.memset(data.bytes(), (byte) 0);
        }); GraphExec exec = a.instantiate(); Graph b = capture(s -> {
            s.memset(data.bytes(), (byte) 0);
            addOn(s, 1);
        })) {
            sim.faults.replaceOnce("cuGraphNodeGetType", CudaDriver.CUDA_ERROR_INVALID_VALUE());
            GraphUpdateReport report = exec.tryUpdateExplained(b);
            assertEquals(GraphUpdateResult.NODE_TYPE_CHANGED, report.result());
            assertTrue(report.errorNode().matches("node 0x[0-9a-f]+ of the new graph"), report.errorNode());
            assertTrue(report.errorFromNode().startsWith("kernel node 0 of"), report.errorFromNode());
        }
    }

    @Test
    void aRefusalForMemoryNodesKeepsNoSpare() {
        try (Graph a = capture(s -> {
            s.allocate(256).close();
            addOn(s, 1);
        }); UpdatingExecutable exec = UpdatingExecutable.instantiate(a); Graph b = one(5)) {
            UpdatingExecutable.Install i = exec.install(b);
            assertEquals(UpdatingExecutable.Path.INSTANTIATED, i.path());
            assertEquals(GraphUpdateResult.MEMORY_NODES, i.refusal().result());
            assertFalse(exec.hasSpare());
            assertEquals(5, run(exec));
        }
    }

    @Test
    void aFailedInstantiationLeavesTheCurrentExecutableAndTheSpareAsTheyWere() {
        try (Graph a = one(1); UpdatingExecutable exec = UpdatingExecutable.instantiate(a)) {
            try (Graph b = two(2)) {
                exec.install(b);
            }
            GraphExec current = exec.current();
            try (Graph c = capture(s -> {
                addOn(s, 1);
                addOn(s, 2);
                addOn(s, 3);
            })) {
                sim.faults.replaceOnce("cuGraphInstantiateWithFlags", CudaDriver.CUDA_ERROR_OUT_OF_MEMORY());
                assertThrows(CudaException.class, () -> exec.install(c));
            }
            assertSame(current, exec.current());
            assertTrue(exec.hasSpare());
            assertEquals(102, run(exec));
            assertEquals(2, exec.counters().instantiations());
        }
    }

    @Test
    void eachInstallIsRecordedWithItsPathAndReason() {
        List<RecordedEvent> events = FlightRecording.of(() -> {
            try (Graph a = one(1); UpdatingExecutable exec = UpdatingExecutable.instantiate(a); Graph b = two(2);
                    Graph a2 = one(3)) {
                exec.install(b);
                exec.install(a2);
            }
        });
        List<RecordedEvent> installs = FlightRecording.named(events, "dev.gatun.GraphInstall");
        assertEquals(List.of("INSTANTIATED", "SPARE"), installs.stream().map(e -> e.getString("path")).toList());
        assertEquals(List.of("TOPOLOGY_CHANGED", "TOPOLOGY_CHANGED"),
                installs.stream().map(e -> e.getString("reason")).toList());
    }

    @Test
    void aClosedPolicyRefusesInstallsAndClosesBothExecutables() {
        UpdatingExecutable exec;
        try (Graph a = one(1); Graph b = two(2)) {
            exec = UpdatingExecutable.instantiate(a);
            exec.install(b);
            exec.close();
            exec.close();
            assertThrows(IllegalStateException.class, () -> exec.install(a));
            assertThrows(IllegalStateException.class, () -> exec.launch(stream));
        }
        ctx.reap();
        assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.GRAPH_EXEC));
    }
}
