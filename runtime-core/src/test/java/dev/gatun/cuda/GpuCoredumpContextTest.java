package dev.gatun.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.bindings.driver.CudaDriver;
import dev.gatun.cuda.internal.driver.CoredumpCalls;
import dev.gatun.cuda.internal.driver.DriverApi;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.FlightRecording;
import dev.gatun.cuda.testing.LogCapture;
import dev.gatun.cuda.testing.Simulated;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.List;
import java.util.Optional;
import jdk.jfr.consumer.RecordedEvent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.event.Level;

/**
 * GPU coredumps on the simulated driver: what a context with dumps on sets (always with
 * CU_COREDUMP_SKIP_ABORT), that dumps off cost no driver call, how the driver's environment takes
 * precedence, and how a poisoned context's exception and JFR event name the dump. The simulated
 * driver writes no dump: each test writes the file where the driver would.
 */
class GpuCoredumpContextTest {

    private static final int ENABLE = CudaDriver.CU_COREDUMP_ENABLE_ON_EXCEPTION();
    private static final int FILE = CudaDriver.CU_COREDUMP_FILE();
    private static final int FLAGS = CudaDriver.CU_COREDUMP_GENERATION_FLAGS();
    private static final int SKIP_ABORT = CudaDriver.CU_COREDUMP_SKIP_ABORT();
    private static final int ILLEGAL_ADDRESS = CudaDriver.CUDA_ERROR_ILLEGAL_ADDRESS();
    private static final long PID = ProcessHandle.current().pid();

    private final Simulated sim = new Simulated(new FakeDriverApi().deviceCount(2));

    @TempDir
    Path dir;

    private CudaContext open(int device, GpuCoredumps dumps) {
        return sim.cuda.device(device).context(ContextOptions.defaults().withCoredumps(dumps));
    }

    private Object setting(int device, int attribute) {
        return sim.gpu.coredumpSetting(sim.gpu.primaryContext(device), attribute);
    }

    @Test
    void dumpsOnSetFileFlagsWithSkipAbortAndEnableOnTheContext() {
        GpuCoredumps light = GpuCoredumps.into(dir);
        open(0, light);
        assertEquals(true, setting(0, ENABLE));
        assertEquals(light.file(), setting(0, FILE));
        assertEquals(CudaDriver.CU_COREDUMP_LIGHTWEIGHT_FLAGS() | SKIP_ABORT, setting(0, FLAGS));

        open(1, light.withLightweight(false));
        assertEquals(SKIP_ABORT, setting(1, FLAGS), "a full dump skips nothing but the abort");
        assertEquals(true, setting(1, ENABLE));
    }

    @Test
    void dumpsOffMakeNoCoredumpCall() {
        sim.faults.countCalls();
        sim.context().close();
        assertTrue(sim.faults.calls("cuCtxGetStreamPriorityRange") > 0, "the count sees the context open");
        assertEquals(0, sim.faults.calls("cuCoredumpSetAttribute") + sim.faults.calls("cuCoredumpGetAttribute"));
        assertEquals(false, setting(0, ENABLE));
    }

    @Test
    void aContextOpenedWithDumpsOffAfterOneWithDumpsOnTurnsThemOffAgain() {
        open(0, GpuCoredumps.into(dir)).close();
        CudaContext off = sim.context();
        assertEquals(false, setting(0, ENABLE), "the primary context keeps its settings: turned off again");
        CudaException first = poison(off);
        ContextPoisonedException later = assertThrows(ContextPoisonedException.class, () -> off.allocate(8));
        assertEquals(Optional.empty(), later.coredumpFile());
        assertTrue(later.getMessage().contains("needs a new process [device 0]"), "nothing about dumps: "
                + later.getMessage());
        assertTrue(first.getMessage().contains("ILLEGAL_ADDRESS"));
    }

    @Test
    void thePoisonedContextsExceptionAndEventNameTheDumpAndHowToOpenIt() throws IOException {
        CudaContext ctx = open(0, GpuCoredumps.into(dir).withFile(dir + "/core_%p.nvcudmp"));
        Path dump = Files.write(dir.resolve("core_" + PID + ".nvcudmp"), new byte[] {0x7f, 'E', 'L', 'F'});
        Stream s = ctx.createStream();
        List<RecordedEvent> events = FlightRecording.of(() -> {
            sim.faults.replaceOnce("cuStreamSynchronize", ILLEGAL_ADDRESS);
            LogCapture.clear();
            CudaException first = assertThrows(CudaException.class, s::synchronize);
            LogCapture.expectPoisonedBy(first);
            LogCapture.expect(Level.ERROR, "dev.gatun.cuda.internal.driver.Checked", "the driver wrote a GPU coredump to "
                    + dump);
        });
        ContextPoisonedException later = assertThrows(ContextPoisonedException.class, () -> ctx.allocate(8));
        assertEquals(Optional.of(dump), later.coredumpFile());
        assertTrue(later.getMessage().contains("needs a new process; the driver wrote a GPU coredump to " + dump
                + "; open it with: cuda-gdb -ex \"target cudacore " + dump + "\""), later.getMessage());
        RecordedEvent poisoned = events.stream().filter(e -> e.getEventType().getName().equals("dev.gatun.ContextPoisoned"))
                .findFirst().orElseThrow();
        assertEquals(dump.toString(), poisoned.getString("coredumpFile"));
    }

    @Test
    void aPatternWithTheTimeNamesTheNewestMatchingFileOfThisProcess() throws IOException {
        CudaContext ctx = open(0, GpuCoredumps.into(dir).withFile(dir + "/gpu_%t_%p.core"));
        Path older = Files.write(dir.resolve("gpu_1700000000_" + PID + ".core"), new byte[1]);
        Path newer = Files.write(dir.resolve("gpu_1700000100_" + PID + ".core"), new byte[1]);
        Path otherProcess = Files.write(dir.resolve("gpu_1700000200_" + (PID + 1) + ".core"), new byte[1]);
        Files.setLastModifiedTime(older, FileTime.fromMillis(1_000_000));
        Files.setLastModifiedTime(newer, FileTime.fromMillis(2_000_000));
        Files.setLastModifiedTime(otherProcess, FileTime.fromMillis(3_000_000));
        poison(ctx);
        ContextPoisonedException later = assertThrows(ContextPoisonedException.class, () -> ctx.allocate(8));
        assertEquals(Optional.of(newer), later.coredumpFile());
        assertTrue(later.getMessage().contains("the driver wrote a GPU coredump to " + newer + " (the newest file in "
                + dir + " matching the pattern " + dir + "/gpu_%t_%p.core)"), later.getMessage());
    }

    @Test
    void whenNoDumpIsFoundTheMessageSaysSoAndNamesThePattern() {
        CudaContext ctx = open(0, GpuCoredumps.into(dir).withFile(dir + "/gpu_%t.core"));
        poison(ctx);
        ContextPoisonedException later = assertThrows(ContextPoisonedException.class, () -> ctx.allocate(8));
        assertEquals(Optional.empty(), later.coredumpFile());
        assertTrue(later.getMessage().contains("GPU coredumps were on (file pattern " + dir + "/gpu_%t.core), but no "
                + "file in " + dir + " matched it when the context was poisoned"), later.getMessage());

        CudaContext exact = open(1, GpuCoredumps.into(dir).withFile(dir + "/exact_%p"));
        poison(exact);
        later = assertThrows(ContextPoisonedException.class, () -> exact.allocate(8));
        Path expected = dir.resolve("exact_" + PID);
        assertEquals(Optional.of(expected), later.coredumpFile(), "the exact name is known even before the file exists");
        assertTrue(later.getMessage().contains("GPU coredumps were on, but " + expected + " (file pattern " + dir
                + "/exact_%p) did not exist when the context was poisoned"), later.getMessage());
    }

    @Test
    void aDumpFinishedAfterThePoisoningIsNamedAsWrittenByTheNextRefusedCall() throws IOException {
        CudaContext ctx = open(0, GpuCoredumps.into(dir).withFile(dir + "/late_%p"));
        poison(ctx);
        Path dump = dir.resolve("late_" + PID);
        assertTrue(assertThrows(ContextPoisonedException.class, () -> ctx.allocate(8)).getMessage()
                .contains("did not exist when the context was poisoned"));
        Files.write(dump, new byte[1]); // the driver finished writing it
        ContextPoisonedException later = assertThrows(ContextPoisonedException.class, () -> ctx.allocate(8));
        assertEquals(Optional.of(dump), later.coredumpFile());
        assertTrue(later.getMessage().contains("the driver wrote a GPU coredump to " + dump), later.getMessage());
    }

    @Test
    void flagsFromTheEnvironmentWithoutSkipAbortRefuseTheContextBeforeDumpsAreOn() {
        sim.gpu.coredumpEnvironment(FLAGS, 0);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> open(0, GpuCoredumps.into(dir)));
        assertTrue(e.getMessage().contains("without CU_COREDUMP_SKIP_ABORT, so a kernel fault would abort the JVM"),
                e.getMessage());
        assertEquals(false, setting(0, ENABLE), "never turned on while the driver would abort");
        assertThrows(IllegalStateException.class, () -> open(0, GpuCoredumps.into(dir)), "refused every time");
        sim.faults.countCalls();
        sim.context().close();
        assertEquals(2, sim.faults.calls("cuCoredumpSetAttribute"),
                "a context without dumps makes sure the half-done attempts left them off (size, then the switch)");
    }

    @Test
    void dumpsTheEnvironmentKeepsOffRefuseTheContext() {
        sim.gpu.coredumpEnvironment(ENABLE, false);
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> open(0, GpuCoredumps.into(dir)));
        assertTrue(e.getMessage().contains("unset CUDA_ENABLE_COREDUMP_ON_EXCEPTION"), e.getMessage());
    }

    @Test
    void aFileFromTheEnvironmentIsTheOneNamed() throws IOException {
        String elsewhere = dir + "/env_%p";
        sim.gpu.coredumpEnvironment(FILE, elsewhere);
        CudaContext ctx = open(0, GpuCoredumps.into(dir));
        LogCapture.expect(Level.INFO, CoredumpCalls.class, "go to " + elsewhere + ", not " + dir + "/core_%h_%p.nvcudmp");
        Path dump = Files.write(dir.resolve("env_" + PID), new byte[1]);
        poison(ctx);
        assertEquals(Optional.of(dump), assertThrows(ContextPoisonedException.class, () -> ctx.allocate(8)).coredumpFile());
    }

    @Test
    void aDriverOlderThanCuda12_5IsTooOldForDumps() {
        Simulated old = new Simulated(new FakeDriverApi().version(12040));
        DriverTooOldException e = assertThrows(DriverTooOldException.class,
                () -> old.cuda.device(0).context(ContextOptions.defaults().withCoredumps(GpuCoredumps.into(dir))));
        assertEquals("GPU coredumps on sticky errors", e.feature());
        assertEquals("CU_COREDUMP_GENERATION_FLAGS", e.function(), "what the dumps need beyond the functions of 12.1");
        assertEquals(12050, e.requiredVersion());
        old.cuda.device(0).context(ContextOptions.defaults()).close(); // off: nothing asked of the driver
    }

    @Test
    void theSimulatedDriverIsStrictAboutSizesValuesAndTheCurrentContext() {
        DriverApi api = sim.gpu.api();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment size = arena.allocate(ValueLayout.JAVA_LONG);
            assertEquals(CudaDriver.CUDA_ERROR_INVALID_CONTEXT(), api.cuCoredumpSetAttribute(ENABLE, MemorySegment.NULL,
                    size), "no current context on this thread yet");
            api.cuCtxSetCurrent(sim.gpu.primaryContext(0));
            assertEquals(0, api.cuCoredumpSetAttribute(FILE, MemorySegment.NULL, size));
            assertEquals(1024, size.get(ValueLayout.JAVA_LONG, 0));
            MemorySegment flags = arena.allocateFrom(ValueLayout.JAVA_INT, 1 << 6);
            size.set(ValueLayout.JAVA_LONG, 0, 4);
            assertEquals(FakeDriverApi.INVALID_VALUE, api.cuCoredumpSetAttribute(FLAGS, flags, size), "an unknown flag");
            size.set(ValueLayout.JAVA_LONG, 0, 8);
            flags.set(ValueLayout.JAVA_INT, 0, SKIP_ABORT);
            assertEquals(FakeDriverApi.INVALID_VALUE, api.cuCoredumpSetAttribute(FLAGS, flags, size), "a wrong size");
            MemorySegment bool = arena.allocateFrom(ValueLayout.JAVA_BYTE, (byte) 2);
            size.set(ValueLayout.JAVA_LONG, 0, 1);
            assertEquals(FakeDriverApi.INVALID_VALUE, api.cuCoredumpSetAttribute(ENABLE, bool, size), "not a bool");
            bool.set(ValueLayout.JAVA_BYTE, 0, (byte) 1);
            assertEquals(FakeDriverApi.INVALID_VALUE, api.cuCoredumpSetAttribute(
                    CudaDriver.CU_COREDUMP_ENABLE_USER_TRIGGER(), bool, size), "not settable per context");
            assertEquals(FakeDriverApi.INVALID_VALUE, api.cuCoredumpSetAttribute(CudaDriver.CU_COREDUMP_MAX(), bool,
                    size));
            assertEquals(false, setting(0, ENABLE), "nothing refused was set");
        }
    }

    /** A sticky error on a stream synchronize poisons {@code ctx}; its ERROR is expected. */
    private CudaException poison(CudaContext ctx) {
        Stream s = ctx.createStream();
        sim.faults.replaceOnce("cuStreamSynchronize", ILLEGAL_ADDRESS);
        LogCapture.clear();
        CudaException first = assertThrows(CudaException.class, s::synchronize);
        LogCapture.expectPoisonedBy(first);
        return first;
    }
}
