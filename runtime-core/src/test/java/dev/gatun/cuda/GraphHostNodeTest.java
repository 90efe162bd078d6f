package dev.gatun.cuda;

import static dev.gatun.cuda.AddKernelFixture.filled;
import static dev.gatun.cuda.AddKernelFixture.read;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.driver.HostFunction;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.LogCapture;
import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.event.Level;

/**
 * Host nodes and host functions on the simulated driver, which runs each through Gatun's one
 * upcall stub when the work before it has run: a host node runs its Java callback at every launch
 * between the nodes around it (with copy nodes between pinned host memory and the device); a host
 * function on a stream runs after the work before it, and inside a capture becomes a host node;
 * every driver call made inside a callback is refused before it reaches the driver; what a
 * callback throws is logged, counted and kept; the graph, its executables and captures hold the
 * callback until nothing can run it.
 */
class GraphHostNodeTest {

    private static final int N = AddKernelFixture.N;

    private final AddKernelFixture fixture = new AddKernelFixture(new FakeDriverApi());
    private final Simulated sim = fixture.sim;
    private final CudaContext ctx = fixture.ctx;
    private final Stream stream = fixture.stream;
    /** Callbacks registered by other tests' graphs not yet gone; this test's come and go on top. */
    private final int registeredBefore = HostFunction.registered();


    @AfterEach
    void nothingLeftOrMisused() {
        fixture.close();
        assertEquals(0, sim.gpu.liveHostAllocations());
    }

    private static int[] ints(MemorySegment host) {
        return host.asSlice(0, 4L * N).toArray(ValueLayout.JAVA_INT);
    }

    /** The shape of simpleCudaGraphs: H2D copy, kernel, D2H copy, host node reading the result, then its answer uploaded. */
    @Test
    void aHostNodeRunsBetweenItsNeighboursAtEveryLaunchWithCopiesToAndFromPinnedMemory() {
        try (DeviceBuffer a = ctx.allocate(4 * N); DeviceBuffer b = ctx.allocate(4 * N);
                PinnedBuffer in = ctx.allocatePinned(4 * N); PinnedBuffer out = ctx.allocatePinned(4 * N);
                PinnedBuffer answer = ctx.allocatePinned(4 * N); Graph g = ctx.createGraph()) {
            MemorySegment inHost = in.segment();
            MemorySegment outHost = out.segment();
            MemorySegment answerHost = answer.segment();
            b.asInts().copyFrom(new int[N]); // poisoned below, before each launch
            List<int[]> seen = new ArrayList<>();
            GraphNode up = g.addUpload(a.asInts(), in, 0);
            GraphNode step = g.addKernel(fixture.launch(a, 10), up);
            GraphNode down = g.addDownload(out, 0, a.asInts(), step);
            GraphNode host = g.addHost(() -> {
                int[] got = ints(outHost);
                seen.add(got);
                for (int i = 0; i < N; i++) {
                    answerHost.setAtIndex(ValueLayout.JAVA_INT, i, 2 * got[i]); // the host's part of the work
                }
            }, down);
            g.addUpload(b.asInts(), answer, 0, host);
            assertEquals(GraphNode.Kind.HOST, host.kind());
            try (GraphExec exec = g.instantiate()) {
                for (int launchNumber = 1; launchNumber <= 3; launchNumber++) {
                    int[] input = new int[N];
                    Arrays.setAll(input, i -> i * 3 + 1);
                    int base = launchNumber;
                    for (int i = 0; i < N; i++) {
                        inHost.setAtIndex(ValueLayout.JAVA_INT, i, input[i] + base);
                    }
                    b.asInts().copyFrom(filled(-7)); // poison
                    exec.launch(stream);
                    stream.synchronize();
                    int[] expected = new int[N];
                    Arrays.setAll(expected, i -> input[i] + base + 10);
                    assertArrayEquals(expected, seen.get(launchNumber - 1), "the host node saw the kernel's output");
                    assertArrayEquals(Arrays.stream(expected).map(v -> 2 * v).toArray(), read(b),
                            "the upload after the host node moved what it wrote");
                }
                assertEquals(3, seen.size());
            }
        }
    }

    @Test
    void everyDriverCallInsideACallbackIsRefusedBeforeTheDriverSeesIt() {
        List<Throwable> refused = new ArrayList<>();
        try (DeviceBuffer a = ctx.allocate(4 * N); Graph g = ctx.createGraph()) {
            g.addHost(() -> {
                sim.faults.countCalls();
                for (Runnable call : List.<Runnable>of(stream::query, () -> fixture.launch(a, 1).launch(stream),
                        () -> ctx.allocate(64).close(), () -> stream.launchHostFunction(() -> { }))) {
                    try {
                        call.run();
                    } catch (RuntimeException e) {
                        refused.add(e);
                    }
                }
            });
            try (GraphExec exec = g.instantiate()) {
                exec.launch(stream);
                stream.synchronize();
            }
        }
        assertEquals(4, refused.size(), () -> "each call is refused: " + refused);
        for (Throwable e : refused) {
            CudaException c = assertInstanceOf(CudaException.class, e);
            assertEquals(CudaDriver.CUDA_ERROR_NOT_PERMITTED(), c.result());
            assertTrue(c.getMessage().contains("inside a host callback"), c::getMessage);
        }
        for (String f : List.of("cuStreamQuery", "cuLaunchKernel", "cuMemAlloc_v2", "cuLaunchHostFunc")) {
            assertEquals(0, sim.faults.calls(f), f + " reached the driver from inside the callback");
        }
        assertEquals(0, ctx.diagnostics().hostCallbackFailureCount(), "the callback caught its refusals itself");
        stream.query(); // outside the callback the same call goes through
    }

    @Test
    void whatACallbackThrowsIsLoggedCountedAndKeptAndTheNodesAfterItStillRun() {
        try (DeviceBuffer a = ctx.allocate(4 * N); Graph g = ctx.createGraph()) {
            a.asInts().copyFrom(new int[N]);
            GraphNode host = g.addHost(() -> {
                throw new IllegalStateException("the callback's own failure");
            });
            g.addKernel(fixture.launch(a, 5), host);
            try (GraphExec exec = g.instantiate()) {
                exec.launch(stream);
                exec.launch(stream);
                stream.synchronize();
            }
            assertArrayEquals(filled(10), read(a), "the kernel after the failed callback ran at both launches");
        }
        assertEquals(2, ctx.diagnostics().hostCallbackFailureCount());
        List<Throwable> failures = ctx.diagnostics().takeHostCallbackFailures();
        assertEquals(2, failures.size());
        assertEquals("the callback's own failure", failures.getFirst().getMessage());
        assertEquals(List.of(), ctx.diagnostics().takeHostCallbackFailures(), "taken once");
        assertEquals(2, ctx.diagnostics().hostCallbackFailureCount(), "the count stays");
        LogCapture.expect(Level.ERROR, "dev.gatun.cuda.internal.context.HostCallbackFailures", "HostCallback#", "threw");
    }

    @Test
    void aHostFunctionRunsAfterTheWorkQueuedBeforeIt() {
        try (DeviceBuffer a = ctx.allocate(4 * N)) {
            a.asInts().copyFrom(new int[N]);
            List<String> order = new ArrayList<>();
            sim.gpu.hold(stream.handle());
            fixture.launch(a, 1).launch(stream);
            stream.launchHostFunction(() -> order.add("host"));
            assertEquals(List.of(), order, "not before the kernel before it");
            sim.gpu.release(stream.handle());
            stream.synchronize();
            assertEquals(List.of("host"), order);
            ctx.reap();
            assertEquals(registeredBefore, HostFunction.registered(), "forgotten once the stream passed it");
        }
    }

    @Test
    void aHostFunctionInACaptureBecomesAHostNodeOfTheGraph() {
        AtomicInteger runs = new AtomicInteger();
        try (DeviceBuffer a = ctx.allocate(4 * N)) {
            a.asInts().copyFrom(new int[N]);
            StreamCapture capture = stream.beginCapture(CaptureMode.GLOBAL);
            fixture.launch(a, 1).launch(stream);
            stream.launchHostFunction(runs::incrementAndGet);
            fixture.launch(a, 2).launch(stream);
            try (Graph g = capture.end()) {
                assertEquals(0, runs.get(), "captured, not run");
                List<GraphNode.Kind> kinds = g.nodes().stream().map(GraphNode::kind).toList();
                assertEquals(List.of(GraphNode.Kind.KERNEL, GraphNode.Kind.HOST, GraphNode.Kind.KERNEL), kinds);
                assertEquals(g.nodes(), g.nodes(), "the same node objects each time");
                assertEquals(-1, g.nodes().getFirst().index(), "captured: not added by hand");
                try (GraphExec exec = g.instantiate()) {
                    exec.launch(stream);
                    exec.launch(stream);
                    stream.synchronize();
                }
                assertEquals(2, runs.get());
                assertArrayEquals(filled(6), read(a));
                assertEquals(registeredBefore + 1, HostFunction.registered(), "held by the graph");
            }
            ctx.reap();
            assertEquals(registeredBefore, HostFunction.registered(), "let go with the graph");
        }
    }

    @Test
    void anAbortedCaptureLetsGoOfItsHostFunction() {
        StreamCapture capture = stream.beginCapture(CaptureMode.GLOBAL);
        stream.launchHostFunction(() -> { });
        assertEquals(registeredBefore + 1, HostFunction.registered(), "held by the capture");
        capture.abort();
        ctx.reap();
        assertEquals(registeredBefore, HostFunction.registered());
    }

    @Test
    void theGraphAndItsExecutableHoldTheCallbackUntilBothAreGone() {
        AtomicInteger runs = new AtomicInteger();
        Graph g = ctx.createGraph();
        g.addHost(runs::incrementAndGet);
        GraphExec exec = g.instantiate();
        g.close();
        ctx.reap();
        assertEquals(registeredBefore + 1, HostFunction.registered(), "the executable still runs it");
        exec.launch(stream);
        stream.synchronize();
        assertEquals(1, runs.get());
        exec.close();
        ctx.reap();
        assertEquals(registeredBefore, HostFunction.registered());
    }

    @Test
    void misuseIsRefusedBeforeAnyDriverCall() {
        try (Graph g = ctx.createGraph(); Graph other = ctx.createGraph(); PinnedBuffer p = ctx.allocatePinned(16);
                DeviceBuffer d = ctx.allocate(32)) {
            GraphNode foreign = other.addHost(() -> { });
            ConditionalHandle h = g.createConditionalHandle(1);
            ConditionalNode loop = g.addIf(h);
            sim.faults.countCalls();
            assertThrows(NullPointerException.class, () -> g.addHost(null));
            assertThrows(IllegalArgumentException.class, () -> g.addHost(() -> { }, foreign));
            assertThrows(IllegalStateException.class, () -> loop.body().addHost(() -> { }));
            assertThrows(IndexOutOfBoundsException.class, () -> g.addUpload(d.bytes(), p, 0), "32 bytes from 16");
            assertThrows(IndexOutOfBoundsException.class, () -> g.addDownload(p, 8, d.bytes().slice(0, 16)));
            assertThrows(NullPointerException.class, () -> stream.launchHostFunction(null));
            assertEquals(0, sim.faults.totalCalls(), "no driver call");
            loop.body().addFill(d.asInts(), 0);
        }
        ctx.reap();
        assertEquals(registeredBefore, HostFunction.registered(), "a refused callback is not kept");
        assertEquals(0, ctx.diagnostics().liveOwners(OwnerKind.HOST_CALLBACK));
    }
}
