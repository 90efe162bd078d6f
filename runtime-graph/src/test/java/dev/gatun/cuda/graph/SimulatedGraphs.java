package dev.gatun.cuda.graph;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.ModuleImage;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.testing.FaultPlan;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The simulated driver set up for graph-lifecycle tests: a context, streams by name, and a kernel
 * {@code mark(label)} whose launches record their label when the simulated GPU runs them, so a
 * test sees which segments ran, in which order. A capture of topology {@code t} records
 * {@code t + 1} launches, the first with its label (the others record nothing): two captures can
 * be updated in place exactly when their topologies are equal. Driver failures are injected per
 * graph operation.
 */
final class SimulatedGraphs implements AutoCloseable {

    /** A graph operation whose driver call can be made to fail. */
    enum Op {
        BEGIN("cuStreamBeginCapture_v2", "cuStreamBeginCapture"),
        /** The capture is invalidated before it ends, as a forbidden call during it would. */
        END("cuStreamEndCapture", "cuStreamEndCapture"),
        INSTANTIATE("cuGraphInstantiateWithFlags", "cuGraphInstantiate"),
        UPDATE("cuGraphExecUpdate_v2", "cuGraphExecUpdate"),
        UPLOAD("cuGraphUpload", "cuGraphUpload"),
        LAUNCH("cuGraphLaunch", "cuGraphLaunch"),
        DESTROY_GRAPH("cuGraphDestroy", "cuGraphDestroy"),
        DESTROY_EXEC("cuGraphExecDestroy", "cuGraphExecDestroy");

        /** The driver function that fails. */
        final String function;
        /** The operation Gatun reports for it. */
        final String operation;

        Op(String function, String operation) {
            this.function = function;
            this.operation = operation;
        }
    }

    private static final int INVALID_VALUE = 1;
    private static final LaunchConfig ONE = LaunchConfig.of(1, 1);

    final Simulated sim = new Simulated();
    final CudaContext ctx = sim.context();
    private final Kernel mark;
    private final List<Integer> ran = new ArrayList<>();
    private final Map<String, Stream> streams = new ConcurrentHashMap<>();
    private volatile Runnable onRun = () -> { };
    private volatile boolean invalidateNextEnd;

    SimulatedGraphs() {
        sim.gpu.kernelBody("mark", l -> {
            onRun.run();
            int label = l.i32(0);
            if (label != 0) {
                synchronized (ran) {
                    ran.add(label);
                }
            }
        });
        ctx.modules().load("marks", ModuleImage.ptx("mark.ptx", Ptx.module("mark", "u32")));
        mark = ctx.modules().kernel("marks", "mark");
    }

    /** The stream called {@code name}, created on first use. */
    Stream stream(String name) {
        return streams.computeIfAbsent(name, n -> ctx.createStream());
    }

    /** Runs {@code action} each time the simulated GPU runs a launch of {@code mark}, inside the driver call that runs it. */
    void onEachRun(Runnable action) {
        onRun = action;
    }

    /** Queues a capture's work on {@code stream}: {@code topology + 1} launches, the first marked {@code label}. */
    void record(String stream, int topology, int label) {
        Stream s = stream(stream);
        mark.launch(s, ONE, KernelArg.i32(label));
        for (int i = 0; i < topology; i++) {
            mark.launch(s, ONE, KernelArg.i32(0));
        }
    }

    void capture(GraphSlot slot, String stream, int topology, int label) {
        slot.beginCapture(stream(stream), CaptureMode.THREAD_LOCAL);
        endCapture(slot, stream, topology, label);
    }

    void recapture(GraphSlot slot, int index, String stream, int topology, int label) {
        slot.beginRecapture(index, stream(stream), CaptureMode.THREAD_LOCAL);
        endCapture(slot, stream, topology, label);
    }

    /** Records the capture's work on {@code stream} (when a capture is open there) and ends {@code slot}'s capture. */
    void endCapture(GraphSlot slot, String stream, int topology, int label) {
        if (slot.phase() == SlotPhase.CAPTURING) {
            record(stream, topology, label);
            invalidateIfAsked(stream);
        }
        slot.endCapture();
    }

    /** Aborts {@code slot}'s capture on {@code stream}. */
    void abortCapture(GraphSlot slot, String stream) {
        if (slot.phase() == SlotPhase.CAPTURING) {
            invalidateIfAsked(stream);
        }
        slot.abortCapture();
    }

    private void invalidateIfAsked(String stream) {
        if (invalidateNextEnd) {
            invalidateNextEnd = false;
            sim.gpu.invalidateCapture(stream(stream).handle());
        }
    }

    /** The next call of {@code op} fails. */
    void failNext(Op op) {
        failAfter(op, 0);
    }

    /** The call of {@code op} after {@code successesFirst} successful ones fails. */
    void failAfter(Op op, int successesFirst) {
        if (op == Op.END) {
            invalidateNextEnd = true; // ended or aborted through this fixture
            return;
        }
        sim.faults.inject(op.function, INVALID_VALUE, FaultPlan.Mode.REPLACE,
                successesFirst, 1);
    }

    /** Forgets failures planned and not reached. */
    void clearFaults() {
        invalidateNextEnd = false;
        sim.faults.clear();
    }

    /** The driver error behind a failure, checked to be {@code op}'s. */
    static void assertFailedIn(Op op, Throwable failure) {
        Throwable t = failure;
        while (t != null && !(t instanceof CudaException)) {
            t = t.getCause();
        }
        assertEquals(op.operation, t == null ? null : ((CudaException) t).operation(), "the failed driver call");
    }

    /** Labels recorded by the launches run since the last call, in run order. */
    List<Integer> takeLaunches() {
        synchronized (ran) {
            List<Integer> taken = List.copyOf(ran);
            ran.clear();
            return taken;
        }
    }

    /** The simulated GPU is busy on every stream: queued work waits until {@link #releaseAll()}. */
    void holdAll() {
        sim.gpu.holdAll();
    }

    /** The simulated GPU finishes everything queued. */
    void releaseAll() {
        for (Stream s : streams.values()) {
            sim.gpu.release(s.handle());
        }
        sim.gpu.release(ctx.computeStream().handle());
        sim.gpu.release(ctx.copyStream().handle());
    }

    int liveGraphs() {
        return sim.gpu.liveGraphs();
    }

    int liveExecs() {
        return sim.gpu.liveGraphExecs();
    }

    /** Closed handles still waiting for their fences or for a retried free. */
    long pendingRetirements() {
        return ctx.diagnostics().counters().pendingRetirements();
    }

    /** Whether the driver reports {@code stream} capturing. */
    boolean capturing(String stream) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment status = arena.allocate(ValueLayout.JAVA_INT);
            assertEquals(0, sim.gpu.api().cuStreamIsCapturing(stream(stream).handle(), status));
            return status.get(ValueLayout.JAVA_INT, 0) != 0;
        }
    }

    List<String> violations() {
        return sim.gpu.violations();
    }

    /**
     * Closes the streams, the kernel and the context (which refuses while a graph or executable
     * is open), then checks that the driver holds no graph or executable and saw no misuse.
     */
    @Override
    public void close() {
        clearFaults();
        for (Stream s : streams.values()) {
            s.close();
        }
        mark.close();
        ctx.close();
        assertEquals(List.of(), violations(), "driver misuse");
        assertEquals(0, liveGraphs(), "live graphs after closing everything");
        assertEquals(0, liveExecs(), "live executables after closing everything");
    }
}
