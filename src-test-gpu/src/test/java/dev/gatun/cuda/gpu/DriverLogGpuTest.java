package dev.gatun.cuda.gpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.CudaException;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Event;
import dev.gatun.cuda.Graph;
import dev.gatun.cuda.GraphExec;
import dev.gatun.cuda.GraphNode;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelAttribute;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.KernelLaunch;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.PinnedBuffer;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.junit.RequiresGpu;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestReporter;
import org.junit.jupiter.api.function.Executable;

/**
 * The driver's error log on a real driver (CUDA 12.9 or newer): refusals that Gatun does not
 * check first, each made through Gatun's API, come back as a {@link CudaException} whose
 * {@link CudaException#driverLog()} explains them. The wording is the driver's and unknown until
 * it runs, so each test asserts only that the log is not empty and names the argument (or at
 * least the function), and publishes the exception's message, so that a run records the lines.
 */
@RequiresGpu
class DriverLogGpuTest {

    // The refusals reach the driver through Gatun's API only. Device and kernel attributes are
    // enums since issue 35, so an unknown attribute can no longer be asked for: the refusals are
    // a read-only attribute set, and more dynamic shared memory than any block has.

    private static final String PLAIN = """
            extern "C" __global__ void plain(int* out) {
                out[threadIdx.x] = threadIdx.x;
            }
            """;
    /** Compiled for clusters of 2 blocks (sm_90 on): a launch that asks for another cluster shape is the driver's to refuse. */
    private static final String CLUSTERED = """
            extern "C" __global__ void __cluster_dims__(2, 1, 1) clustered(int* out) {
                out[blockIdx.x] = blockIdx.x;
            }
            """;

    @BeforeEach
    void needsADriverWithTheLog() {
        int version = Cuda.system().driverVersion().encoded();
        assumeTrue(version >= 12090, () -> "the driver supports CUDA " + Cuda.system().driverVersion()
                + "; its error log needs 12.9 or newer");
    }

    /** The refusal {@code call} throws, whose driver log must name {@code argument} or {@code function}. */
    private static CudaException refused(String function, TestReporter reporter, Executable call, String... argument) {
        CudaException e = assertThrows(CudaException.class, call, function);
        reporter.publishEntry(function, e.getMessage());
        List<String> log = e.driverLog();
        assertFalse(log.isEmpty(), () -> "the driver logged nothing for " + e.getMessage());
        String text = String.join("\n", log).toLowerCase(Locale.ROOT);
        List<String> names = new ArrayList<>(List.of(argument));
        names.add(function);
        assertTrue(names.stream().anyMatch(n -> text.contains(n.toLowerCase(Locale.ROOT))),
                () -> "the driver's lines name none of " + names + ": " + log);
        return e;
    }

    @Test
    void aRefusedKernelAttributeIsExplainedAndEachLineIsAFlightRecorderEvent(TestReporter reporter) {
        try (Kernel k = Gpu.kernel(PLAIN, "plain")) {
            CudaException[] thrown = new CudaException[1];
            List<RecordedEvent> events = driverLogEvents(() -> thrown[0] = refused("cuFuncSetAttribute", reporter,
                    () -> k.setAttribute(KernelAttribute.NUM_REGS, 16), "attrib"));
            List<String> recorded = events.stream().map(e -> e.getString("message")).toList();
            List<String> carried = thrown[0].driverLog();
            assertFalse(recorded.isEmpty(), "the refused call logged nothing");
            assertEquals(recorded, carried, "the exception carries exactly the lines its call logged");
        }
    }

    /**
     * Issue 34: on the H100 a refused {@code cuDeviceGetAttribute(100000)} carried fourteen lines of
     * "Unsupported node type: 6/7" that earlier graph calls, which succeeded, had logged. Here graph
     * calls with event nodes (what logged those lines) run before each of two unrelated
     * refusals in a row; each refusal carries exactly the lines JFR recorded during its own call.
     */
    @Test
    void eachOfSeveralRefusalsInARowCarriesExactlyItsOwnLines(TestReporter reporter) {
        CudaContext ctx = Gpu.context();
        int graphLines = 0;
        try (Kernel k = Gpu.kernel(PLAIN, "plain"); DeviceBuffer out = ctx.allocate(32 * Integer.BYTES);
                Stream stream = ctx.createStream()) {
            List<Executable> refusals = List.of(() -> k.setAttribute(KernelAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, 1 << 30),
                    () -> k.setAttribute(KernelAttribute.NUM_REGS, 16));
            for (Executable refusal : refusals) {
                graphLines += driverLogEvents(() -> graphCallsWithEventNodes(ctx, k, out, stream)).size();
                CudaException[] thrown = new CudaException[1];
                List<String> recorded = driverLogEvents(() -> thrown[0] = assertThrows(CudaException.class, refusal))
                        .stream().map(e -> e.getString("message")).toList();
                reporter.publishEntry(thrown[0].operation(), thrown[0].getMessage());
                assertFalse(recorded.isEmpty(), () -> thrown[0].operation() + " logged nothing");
                assertEquals(recorded, thrown[0].driverLog(), () -> thrown[0].operation()
                        + " carries other lines than its own call logged");
            }
        }
        System.out.println("DRIVER-LOG 2 refusals in a row each carried exactly the lines of its own call; the graph "
                + "calls between them logged " + graphLines + " lines, none carried");
    }

    /**
     * The same refusals from two threads at once, six rounds each, each after graph calls with
     * event nodes: a refusal carries the same lines every time, on either thread, whatever the
     * other calls (there, or on the other thread) logged.
     */
    @Test
    void refusalsOnTwoThreadsCarryTheSameLinesEveryTime() throws Exception {
        CudaContext ctx = Gpu.context();
        int rounds = 6;
        try (Kernel k = Gpu.kernel(PLAIN, "plain")) {
            CyclicBarrier turn = new CyclicBarrier(2);
            Callable<List<List<String>>> thread = () -> {
                List<List<String>> carried = new ArrayList<>();
                try (DeviceBuffer out = ctx.allocate(32 * Integer.BYTES); Stream stream = ctx.createStream()) {
                    for (int i = 0; i < rounds; i++) {
                        turn.await(1, TimeUnit.MINUTES); // a deadlock guard
                        graphCallsWithEventNodes(ctx, k, out, stream);
                        Executable refusal = i % 2 == 0
                                ? () -> k.setAttribute(KernelAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, 1 << 30)
                                : () -> k.setAttribute(KernelAttribute.NUM_REGS, 16);
                        carried.add(assertThrows(CudaException.class, refusal).driverLog());
                    }
                }
                return carried;
            };
            ExecutorService two = Executors.newFixedThreadPool(2);
            try {
                Future<List<List<String>>> a = two.submit(thread);
                Future<List<List<String>>> b = two.submit(thread);
                List<List<String>> first = a.get(5, TimeUnit.MINUTES);
                List<List<String>> second = b.get(5, TimeUnit.MINUTES);
                for (int i = 0; i < rounds; i++) {
                    List<String> expected = first.get(i % 2);
                    assertFalse(expected.isEmpty(), "the driver explained nothing");
                    assertEquals(expected, first.get(i), "round " + i + " of the first thread");
                    assertEquals(expected, second.get(i), "round " + i + " of the second thread");
                }
                System.out.println("DRIVER-LOG 2 threads x " + rounds + " refusals after graph calls: each carried its "
                        + "own lines only (" + first.get(0).size() + " for too much shared memory, " + first.get(1).size()
                        + " for a read-only attribute)");
            } finally {
                two.shutdownNow();
            }
        }
    }

    /**
     * Graph calls that succeed: a graph with an event record and an event wait node around a
     * kernel node (node types 7 and 6), instantiated, updated in place to its copy, launched.
     */
    private static void graphCallsWithEventNodes(CudaContext ctx, Kernel k, DeviceBuffer out, Stream stream) {
        try (Event e = ctx.createEvent(); Graph g = ctx.createGraph()) {
            GraphNode record = g.addEventRecord(e);
            GraphNode wait = g.addEventWait(e, record);
            g.addKernel(k.prepare(LaunchConfig.of(1, 32), KernelArg.pointer(out)), wait);
            try (GraphExec exec = g.instantiate(); Graph copy = g.copy()) {
                assertTrue(exec.tryUpdateExplained(copy).isApplied(), "an update to a copy of its graph");
                exec.launch(stream);
                stream.synchronize();
            }
        }
    }

    @Test
    void moreDynamicSharedMemoryThanAnyBlockHasIsExplained(TestReporter reporter) {
        try (Kernel k = Gpu.kernel(PLAIN, "plain")) {
            refused("cuFuncSetAttribute", reporter, () -> k.setAttribute(KernelAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, 1 << 30),
                    "value", "attrib", "shared");
        }
    }

    @Test
    void settingAReadOnlyKernelAttributeIsExplained(TestReporter reporter) {
        try (Kernel k = Gpu.kernel(PLAIN, "plain")) {
            refused("cuFuncSetAttribute", reporter, () -> k.setAttribute(KernelAttribute.NUM_REGS, 16), "attrib");
        }
    }

    @Test
    void aClusterShapeOtherThanTheKernelWasCompiledForIsExplained(TestReporter reporter) {
        CudaContext ctx = Gpu.context();
        assumeTrue(ctx.device().capabilities().computeMajor() >= 9, "thread-block clusters need sm_90");
        try (Kernel k = Gpu.kernel(CLUSTERED, "clustered"); DeviceBuffer out = ctx.allocate(8 * Integer.BYTES);
                Stream stream = ctx.createStream()) {
            refused("cuLaunchKernelEx", reporter,
                    () -> k.launch(stream, LaunchConfig.of(8, 32).withCluster(4, 1, 1), KernelArg.pointer(out)),
                    "cluster");
            stream.synchronize();
        }
    }

    /** A poll of unfinished work is not an error: the driver must not log it, or every poll would pay an upcall. */
    @Test
    void aQueryOfUnfinishedWorkLogsNothing() {
        CudaContext ctx = Gpu.context();
        try (Kernel spin = Gpu.kernel(Gpu.SPIN_THEN_FILL, "spin_then_fill"); PinnedBuffer flag = ctx.allocatePinned(4);
                DeviceBuffer out = ctx.allocate(32 * Float.BYTES); Stream stream = ctx.createStream();
                Event e = ctx.createEvent()) {
            flag.segment().set(ValueLayout.JAVA_INT, 0, 0);
            boolean[] done = new boolean[1];
            // Prepared outside the window: reading the kernel's parameters probes past the last
            // one, which the driver refuses and logs (at DEBUG through Gatun), a line of its own.
            KernelLaunch launch = spin.prepare(LaunchConfig.of(1, 32), KernelArg.address(flag.segment().address()),
                    KernelArg.pointer(out), KernelArg.f32(1f), KernelArg.i64(32));
            List<RecordedEvent> events = driverLogEvents(() -> {
                launch.launch(stream);
                e.record(stream);
                done[0] = e.query();
            });
            flag.segment().set(ValueLayout.JAVA_INT, 0, 1);
            stream.synchronize();
            assertFalse(done[0], "the event was recorded behind a kernel that waits for the flag");
            assertEquals(List.of(), events.stream().map(r -> r.getString("message")).toList());
        }
    }

    /** The driver's lines {@code work} produced, as Gatun's JFR events. */
    private static List<RecordedEvent> driverLogEvents(Runnable work) {
        try (Recording recording = new Recording()) {
            recording.enable("dev.gatun.DriverLog");
            recording.start();
            work.run();
            recording.stop();
            Path file = Files.createTempFile("driver-log", ".jfr");
            try {
                recording.dump(file);
                return RecordingFile.readAllEvents(file).stream()
                        .filter(e -> e.getEventType().getName().equals("dev.gatun.DriverLog")).toList();
            } finally {
                Files.delete(file);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
