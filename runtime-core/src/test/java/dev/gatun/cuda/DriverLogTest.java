package dev.gatun.cuda;

import static dev.gatun.cuda.testing.FlightRecording.named;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.events.DriverLogEvent;
import dev.gatun.cuda.testing.FakeCuda;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.FaultPlan;
import dev.gatun.cuda.testing.FlightRecording;
import dev.gatun.cuda.testing.Interposer;
import dev.gatun.cuda.testing.LogCapture;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import jdk.jfr.EventType;
import jdk.jfr.SettingDescriptor;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.slf4j.event.Level;

/**
 * The driver's error log on the simulated driver, which explains some of its refusals in a line
 * naming the argument (testing/SimulatedLogs), and logs chosen lines in chosen calls: the
 * exception of a refused call carries its own lines and no other call's (one that succeeded, one
 * made outside Gatun, one on another thread), every line reaches SLF4J and JFR, and a driver
 * without the log is said so once at DEBUG and works as before.
 */
class DriverLogTest {

    private static final String DRIVER_LOGGER = "dev.gatun.cuda.driver";
    private static final String DRIVER_LOG_CLASS = "dev.gatun.cuda.internal.driver.DriverLog";
    private static final int ERROR = CudaDriver.CU_LOG_LEVEL_ERROR();
    private static final int WARNING = CudaDriver.CU_LOG_LEVEL_WARNING();
    /** What the simulated driver logs when it refuses the clock rate, once a test makes it fail. */
    private static final String CLOCK_RATE_REFUSED = "cuDeviceGetAttribute: attrib "
            + CudaDriver.CU_DEVICE_ATTRIBUTE_CLOCK_RATE() + " is not an attribute this device reports";
    /** What the simulated driver logs when it refuses {@link #refuseSharedMemory()}. */
    private static final String SHARED_REFUSED = "cuFuncSetAttribute: value 300000 for attrib "
            + "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES is more than the 232448 bytes of dynamic shared memory a "
            + "block of this function can opt in to";

    private final Simulated sim = new Simulated();
    private final CudaContext ctx = sim.context();
    private final Kernel kernel = kernel(ctx);

    private static Kernel kernel(CudaContext context) {
        context.modules().load("m", ModuleImage.ptx("fill.ptx", Ptx.module("fill", "u64", "u32")));
        return context.modules().kernel("m", "fill");
    }

    @AfterEach
    void close() {
        kernel.close();
    }

    /** A refusal the simulated driver explains: more dynamic shared memory than a block can opt in to. */
    private CudaException refuseSharedMemory() {
        return assertThrows(CudaException.class, () -> kernel.setAttribute(KernelAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, 300_000));
    }

    @Test
    void aRefusalCarriesTheDriversLineNamingTheArgument() {
        CudaException e = refuseSharedMemory();
        assertEquals(List.of(SHARED_REFUSED), e.driverLog());
        assertEquals("CUDA_ERROR_INVALID_VALUE", e.resultName());
        assertTrue(e.getMessage().endsWith("[device 0]; driver log: \"" + SHARED_REFUSED + "\""), e.getMessage());
    }

    @Test
    void aRefusedLaunchAndARejectedImageCarryTheirLines() {
        try (Stream stream = ctx.createStream(); DeviceBuffer buffer = ctx.allocate(256)) {
            KernelLaunch launch = kernel.prepare(LaunchConfig.of(1, 32), KernelArg.pointer(buffer), KernelArg.i32(7));
            // Gatun checks every launch the simulated driver would refuse, so the refusal is
            // injected over the call, which logs its line inside, as the driver does.
            String line = "cuLaunchKernel: too many resources requested for launch";
            sim.gpu.driverLogsDuringNext("cuLaunchKernel", ERROR, line);
            sim.faults.overrideOnce("cuLaunchKernel", CudaDriver.CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES());
            LaunchRefusedException refused = assertThrows(LaunchRefusedException.class, () -> launch.launch(stream));
            assertEquals(List.of(line), refused.driverLog());
            assertEquals(refused.driverLog(), ((CudaException) refused.getCause()).driverLog());
            assertTrue(refused.getMessage().contains("[device 0]; driver log: \"" + line + "\". The kernel: "),
                    refused.getMessage());
        }
        sim.gpu.rejectPtx(true);
        ImageRejectedException rejected = assertThrows(ImageRejectedException.class,
                () -> ctx.modules().load("n", ModuleImage.ptx("n.ptx", Ptx.module("n", "u32"))));
        assertEquals(List.of("cuModuleLoadData: the PTX ISA version of image is newer than this driver supports"),
                rejected.driverLog());
    }

    @Test
    void aFailureTheDriverDidNotExplainCarriesNoLine() {
        sim.faults.replaceOnce("cuFuncSetAttribute", CudaDriver.CUDA_ERROR_INVALID_VALUE()); // never reaches the driver
        CudaException e = assertThrows(CudaException.class, () -> kernel.setAttribute(KernelAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, 1024));
        assertEquals(List.of(), e.driverLog());
        assertFalse(e.getMessage().contains("driver log"), e.getMessage());
    }

    @Test
    void anExceptionCarriesOnlyTheLinesOfItsOwnCall() throws InterruptedException {
        Thread other = Thread.ofPlatform().start(() -> sim.gpu.driverLogs(ERROR, "cuMemcpy2D: invalid pitch 3"));
        other.join();
        assertEquals(List.of(SHARED_REFUSED), refuseSharedMemory().driverLog(), "another thread's line stays out");

        sim.gpu.failAttribute(CudaDriver.CU_DEVICE_ATTRIBUTE_CLOCK_RATE());
        CudaException next = assertThrows(CudaException.class,
                () -> ctx.device().attribute(DeviceAttribute.CLOCK_RATE));
        assertEquals(List.of(CLOCK_RATE_REFUSED), next.driverLog(), "the earlier exception took its line");
    }

    /**
     * What issue 34 saw on the H100: a refused {@code cuDeviceGetAttribute} carried fourteen lines
     * of "Unsupported node type" that earlier graph calls, which succeeded, had logged. Here two
     * threads make unrelated refusals in turn, each after a call that succeeds but logs, and a
     * line logged outside Gatun's calls: every exception carries exactly its own line.
     */
    @Test
    void severalUnrelatedFailuresInARowFromTwoThreadsEachCarryOnlyTheirOwnLines() throws Exception {
        LogCapture.enableDebug(DRIVER_LOGGER);
        sim.gpu.failAttribute(CudaDriver.CU_DEVICE_ATTRIBUTE_CLOCK_RATE());
        int rounds = 6;
        CyclicBarrier turn = new CyclicBarrier(2);
        Callable<List<List<String>>> failures = () -> {
            String me = Thread.currentThread().getName();
            List<List<String>> carried = new ArrayList<>();
            try (Stream stream = ctx.createStream()) {
                for (int i = 0; i < rounds; i++) {
                    turn.await(Interposer.GUARD.toMillis(), TimeUnit.MILLISECONDS);
                    sim.gpu.driverLogsDuringNext("cuStreamQuery", WARNING, "Unsupported node type: 7 (" + me + ", " + i + ")");
                    assertTrue(stream.query(), "the query succeeds, and logs");
                    sim.gpu.driverLogs(ERROR, "cuMemcpy2D: invalid pitch " + i + " (" + me + ", outside Gatun)");
                    Executable refusal = i % 2 == 0 ? () -> kernel.setAttribute(KernelAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, 300_000)
                            : () -> ctx.device().attribute(DeviceAttribute.CLOCK_RATE);
                    carried.add(assertThrows(CudaException.class, refusal).driverLog());
                }
            }
            return carried;
        };
        ExecutorService two = Executors.newFixedThreadPool(2, r -> new Thread(r, "failing-" + r.hashCode()));
        try {
            Future<List<List<String>>> a = two.submit(failures);
            Future<List<List<String>>> b = two.submit(failures);
            for (Future<List<List<String>>> f : List.of(a, b)) {
                List<List<String>> carried = f.get(Interposer.GUARD.toMillis(), TimeUnit.MILLISECONDS);
                for (int i = 0; i < rounds; i++) {
                    assertEquals(List.of(i % 2 == 0 ? SHARED_REFUSED : CLOCK_RATE_REFUSED), carried.get(i),
                            "round " + i + " carried " + carried.get(i));
                }
            }
        } finally {
            two.shutdownNow();
        }
        assertEquals(2 * rounds, LogCapture.find(Level.DEBUG, DRIVER_LOGGER, "Unsupported node type: 7").size(),
                "the lines of the queries that succeeded go to DEBUG");
        assertEquals(List.of(), LogCapture.find(Level.WARN, DRIVER_LOGGER, "Unsupported node type"));
    }

    @Test
    void theLinesOfAFailureHandedBackRawStayOutOfTheNextException() {
        try (Stream stream = ctx.createStream()) {
            // A fence record whose failure is handed back raw and retried later, never thrown.
            MemorySegment fence = ctx.state().events().acquire();
            sim.gpu.driverLogsDuringNext("cuEventRecord", ERROR, "cuEventRecord: the stream is being destroyed");
            sim.faults.overrideOnce("cuEventRecord", CudaDriver.CUDA_ERROR_INVALID_HANDLE());
            assertEquals(CudaDriver.CUDA_ERROR_INVALID_HANDLE(),
                    ctx.state().calls().events().tryRecord(fence, stream.state().handle()));
            ctx.state().events().release(fence);
        }
        assertEquals(List.of(SHARED_REFUSED), refuseSharedMemory().driverLog());
        LogCapture.expect(Level.WARN, DRIVER_LOGGER, "cuEventRecord: the stream is being destroyed");
    }

    @Test
    void aRefusalGatunAsksForAsAnAnswerIsNotAttachedToTheNextException() {
        // Preparing a launch reads the kernel's parameters until the driver refuses the index past
        // the last, and logs that refusal (as the real driver does): an answer, not a failure.
        LogCapture.enableDebug(DRIVER_LOGGER);
        try (DeviceBuffer buffer = ctx.allocate(256)) {
            kernel.prepare(LaunchConfig.of(1, 32), KernelArg.pointer(buffer), KernelArg.i32(7));
        }
        LogCapture.expect(Level.DEBUG, DRIVER_LOGGER, "cuFuncGetParamInfo: paramIndex 2 outside of kernel parameter count 2");
        assertEquals(List.of(), LogCapture.find(Level.WARN, DRIVER_LOGGER), "a normal probe warns no one");
        assertEquals(List.of(SHARED_REFUSED), refuseSharedMemory().driverLog());
    }

    @Test
    void aCallKeepsItsNewestSixteenLinesAndCutsALongOne() {
        for (int i = 0; i < 40; i++) {
            sim.gpu.driverLogsDuringNext("cuFuncSetAttribute", WARNING, "line " + i);
        }
        sim.gpu.driverLogsDuringNext("cuFuncSetAttribute", WARNING, "x".repeat(10_000));
        List<String> lines = refuseSharedMemory().driverLog();
        assertEquals(16, lines.size());
        assertEquals("line 26", lines.getFirst(), "lines 0 to 25 were dropped: " + lines);
        assertEquals("x".repeat(4096) + " [cut at 4096 bytes]", lines.get(14));
        assertEquals(SHARED_REFUSED, lines.getLast());
    }

    @Test
    void aFailedCallsLinesGoToSlf4jErrorsAtWarnAndWarningsAtInfoAndOtherLinesAtDebug() {
        LogCapture.enableDebug(DRIVER_LOGGER);
        sim.gpu.driverLogsDuringNext("cuFuncSetAttribute", WARNING, "cuFuncSetAttribute: the cache preference is ignored");
        refuseSharedMemory();
        LogCapture.expect(Level.INFO, DRIVER_LOGGER, "cuFuncSetAttribute: the cache preference is ignored");
        LogCapture.expect(Level.WARN, DRIVER_LOGGER, SHARED_REFUSED);
        assertEquals(List.of(), LogCapture.find(Level.ERROR, DRIVER_LOGGER), "the refused call throws; its caller judges");

        sim.gpu.driverLogsDuringNext("cuEventCreate", ERROR, "cuEventCreate: Unsupported node type: 6");
        ctx.createEvent().close();
        LogCapture.expect(Level.DEBUG, DRIVER_LOGGER, "cuEventCreate: Unsupported node type: 6 (logged by cuEventCreate, "
                + "which succeeded)");
        sim.gpu.driverLogs(WARNING, "cuCtxCreate: flag CU_CTX_SCHED_SPIN is ignored");
        LogCapture.expect(Level.DEBUG, DRIVER_LOGGER, "cuCtxCreate: flag CU_CTX_SCHED_SPIN is ignored (logged outside "
                + "Gatun's driver calls)");
        assertEquals(List.of(), LogCapture.find(Level.WARN, DRIVER_LOGGER, "Unsupported node type"));
        assertEquals(List.of(), LogCapture.find(Level.INFO, DRIVER_LOGGER, "SCHED_SPIN"));
    }

    @Test
    void everyLineIsAFlightRecorderEventWithoutAStackTraceByDefault() {
        List<RecordedEvent> events = named(FlightRecording.of(() -> {
            sim.gpu.driverLogs(WARNING, "cuCtxCreate: flag CU_CTX_SCHED_SPIN is ignored");
            refuseSharedMemory();
        }), "dev.gatun.DriverLog");
        assertEquals(List.of("warning", "error"), events.stream().map(e -> e.getString("level")).toList());
        assertEquals(List.of("cuCtxCreate: flag CU_CTX_SCHED_SPIN is ignored", SHARED_REFUSED),
                events.stream().map(e -> e.getString("message")).toList());
        Map<String, String> defaults = EventType.getEventType(DriverLogEvent.class).getSettingDescriptors().stream()
                .collect(Collectors.toMap(SettingDescriptor::getName, SettingDescriptor::getDefaultValue));
        assertEquals("false", defaults.get("stackTrace"), defaults.toString());
    }

    @Test
    void theCallbackIsRegisteredOnceWhenTheDriverIsCreated() {
        FakeDriverApi gpu = new FakeDriverApi();
        FaultPlan plan = new FaultPlan().countCalls();
        CudaContext context = FakeCuda.over(gpu, plan).device(0).context();
        try (Kernel k = kernel(context); Stream stream = context.createStream()) {
            k.launch(stream, LaunchConfig.of(1, 32), KernelArg.address(0), KernelArg.i32(7));
            stream.synchronize();
        }
        assertEquals(1, plan.calls("cuLogsRegisterCallback"));
        assertEquals(1, gpu.logCallbacks());
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "CUDA_ERROR_NOT_SUPPORTED", "CUDA_ERROR_NOT_FOUND"})
    void aDriverWithoutTheLogSaysSoOnceAtDebugAndWorksAsBefore(String answer) {
        LogCapture.enableDebug(DRIVER_LOG_CLASS);
        FakeDriverApi gpu = new FakeDriverApi();
        FaultPlan plan = new FaultPlan().countCalls();
        if (answer.isEmpty()) {
            gpu.withoutSymbol("cuLogsRegisterCallback"); // older than 12.9
        } else {
            plan.replaceAlways("cuLogsRegisterCallback", answer.equals("CUDA_ERROR_NOT_SUPPORTED")
                    ? CudaDriver.CUDA_ERROR_NOT_SUPPORTED() : CudaDriver.CUDA_ERROR_NOT_FOUND());
        }
        Cuda cuda = FakeCuda.over(gpu, plan);
        CudaContext context = cuda.device(0).context();

        List<LogCapture.Event> said = LogCapture.find(Level.DEBUG, DRIVER_LOG_CLASS,
                "keeps no error log (cuLogsRegisterCallback " + (answer.isEmpty() ? "needs a driver for CUDA 12.9"
                        : "answered " + answer));
        assertEquals(1, said.size(), LogCapture.events().toString());
        assertEquals(answer.isEmpty() ? 0 : 1, plan.calls("cuLogsRegisterCallback"));
        assertEquals(0, gpu.logCallbacks());

        try (Kernel k = kernel(context); DeviceBuffer b = context.allocate(16)) {
            CudaException e = assertThrows(CudaException.class, () -> k.setAttribute(KernelAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, 300_000));
            assertEquals(List.of(), e.driverLog());
            assertFalse(e.getMessage().contains("driver log"), e.getMessage());
            b.asInts().copyFrom(new int[] {1, 2, 3, 4});
            int[] back = new int[4];
            b.asInts().copyTo(back);
            assertArrayEquals(new int[] {1, 2, 3, 4}, back);
        }
    }
}
