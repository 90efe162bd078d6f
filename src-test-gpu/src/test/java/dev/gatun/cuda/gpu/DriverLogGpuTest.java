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
import dev.gatun.cuda.Kernel;
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

    /** Far past {@code CU_DEVICE_ATTRIBUTE_MAX} (148 in CUDA 13.0): no device attribute. */
    private static final int NO_DEVICE_ATTRIBUTE = 100_000;
    /** Far past {@code CU_FUNC_ATTRIBUTE_MAX}: no function attribute. */
    private static final int NO_FUNCTION_ATTRIBUTE = 100_000;
    // cuda.h's CUfunction_attribute values, written out: these tests reach the driver through
    // Gatun's API only, never through the generated bindings.
    /** {@code CU_FUNC_ATTRIBUTE_NUM_REGS}: read-only. */
    private static final int FUNC_NUM_REGS = 4;
    /** {@code CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES}. */
    private static final int FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;

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
    void anUnknownDeviceAttributeIsExplainedAndEachLineIsAFlightRecorderEvent(TestReporter reporter) {
        CudaContext ctx = Gpu.context();
        CudaException[] thrown = new CudaException[1];
        List<RecordedEvent> events = driverLogEvents(() -> thrown[0] = refused("cuDeviceGetAttribute", reporter,
                () -> ctx.device().attribute(NO_DEVICE_ATTRIBUTE), "attrib"));
        List<String> recorded = events.stream().map(e -> e.getString("message")).toList();
        List<String> carried = thrown[0].driverLog();
        // The call's lines are the newest the thread kept. Older ones may precede them: lines the
        // driver logged in this thread's earlier calls that succeeded (under compute-sanitizer it
        // logs "Unsupported node type" for graph calls), which ride along by design.
        assertFalse(recorded.isEmpty(), "the refused call logged nothing");
        assertEquals(recorded, carried.subList(Math.max(0, carried.size() - recorded.size()), carried.size()),
                () -> "JFR recorded " + recorded + ", the exception carries " + carried);
    }

    @Test
    void moreDynamicSharedMemoryThanAnyBlockHasIsExplained(TestReporter reporter) {
        try (Kernel k = Gpu.kernel(PLAIN, "plain")) {
            refused("cuFuncSetAttribute", reporter, () -> k.setAttribute(FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES, 1 << 30),
                    "value", "attrib", "shared");
        }
    }

    @Test
    void settingAReadOnlyKernelAttributeIsExplained(TestReporter reporter) {
        try (Kernel k = Gpu.kernel(PLAIN, "plain")) {
            refused("cuFuncSetAttribute", reporter, () -> k.setAttribute(FUNC_NUM_REGS, 16), "attrib");
        }
    }

    @Test
    void anUnknownKernelAttributeIsExplained(TestReporter reporter) {
        try (Kernel k = Gpu.kernel(PLAIN, "plain")) {
            refused("cuFuncGetAttribute", reporter, () -> k.attribute(NO_FUNCTION_ATTRIBUTE), "attrib");
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
