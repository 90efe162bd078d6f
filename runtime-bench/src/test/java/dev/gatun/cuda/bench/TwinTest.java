package dev.gatun.cuda.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.ModuleImage;
import dev.gatun.cuda.blas.internal.load.BlasLibrary;
import dev.gatun.cuda.testing.Background;
import dev.gatun.cuda.testing.FakeDriverApi;
import dev.gatun.cuda.testing.Interposer;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The Java twin on the simulated driver: every row runs, as the method says, and cleans up. */
class TwinTest {

    /** The PTX the twins share, as the simulated driver reads it (entry signatures only). */
    private static final ModuleImage KERNELS = ModuleImage.ptx("twins.ptx",
            Ptx.module("empty") + Ptx.module("four", "u64", "u32", "f32", "u64")
                    + Ptx.module("pingpong", "u64", "u64", "u32"));

    /**
     * How long the simulated ping-pong thread waits for a ping before it gives up, as twins.cu's
     * does after about 4 s; below {@link Interposer#GUARD}, so that a join of it ends in time.
     */
    private static final long SIMULATED_PATIENCE_NANOS = 4_000_000_000L;

    private static final VarHandle WORD = ValueLayout.JAVA_INT.varHandle();

    private static final int N = 2 * TwinRow.BATCH;

    /**
     * A simulated GPU whose {@code four} computes out[i] = a * in[i] for i < n, and whose
     * {@code pingpong} answers pings on a thread of its own (added to {@code answering}), as
     * twins.cu's kernels do. The simulated stream runs a launch's body at once and counts it
     * complete: the thread stands for the GPU thread that keeps running. A pinned free
     * ({@code cuMemFreeHost}, which synchronizes the device on the real driver) first waits for
     * that thread to end, as the real free waits for the kernel, so that it never reads a freed word.
     */
    private static Simulated gpu(List<Background<Integer>> answering) {
        Interposer interposer = Interposer.over(new FakeDriverApi());
        interposer.around((function, args, real) -> {
            if (function.startsWith("cuMemFreeHost")) {
                answering.forEach(Background::joinFailure);
            }
            return real.call();
        });
        Simulated sim = new Simulated(interposer);
        sim.gpu.kernelBody("pingpong", l -> {
            long ping = l.pointer(0);
            long pong = l.pointer(1);
            int n = l.i32(2);
            answering.add(Background.call("pingpong", () -> answer(ping, pong, n)));
        });
        sim.gpu.kernelBody("four", l -> {
            MemorySegment out = l.memory(l.pointer(0), 4L * TwinRow.FOUR_ELEMENTS);
            MemorySegment in = l.memory(l.pointer(3), 4L * TwinRow.FOUR_ELEMENTS);
            for (int i = 0; i < Math.min(l.i32(1), l.gridX() * l.blockX()); i++) {
                out.setAtIndex(ValueLayout.JAVA_FLOAT, i, l.f32(2) * in.getAtIndex(ValueLayout.JAVA_FLOAT, i));
            }
        });
        return sim;
    }

    private static Simulated gpu() {
        return gpu(new CopyOnWriteArrayList<>());
    }

    /**
     * twins.cu's {@code pingpong} on the host: for i = 1..n, waits for ping == i, then sets pong
     * = i; gives up (pong = -1) after {@link #SIMULATED_PATIENCE_NANOS} without the next ping.
     * The words are the mapped words' memory (the simulated device sees them at their host
     * address); the host frees them only after the last pong, which is this thread's last touch.
     *
     * @return the pings answered
     */
    private static int answer(long pingAddress, long pongAddress, int n) {
        MemorySegment ping = MemorySegment.ofAddress(pingAddress).reinterpret(4);
        MemorySegment pong = MemorySegment.ofAddress(pongAddress).reinterpret(4);
        for (int i = 1; i <= n; i++) {
            long since = System.nanoTime();
            while ((int) WORD.getAcquire(ping, 0L) != i) {
                if (System.nanoTime() - since > SIMULATED_PATIENCE_NANOS) {
                    WORD.setRelease(pong, 0L, TwinWorkload.GAVE_UP);
                    return i - 1;
                }
                Thread.onSpinWait();
            }
            WORD.setRelease(pong, 0L, i);
        }
        return n;
    }

    /** The rows that need only the driver: the GEMM rows need cuBLAS, which the simulated machine has not. */
    @ParameterizedTest
    @EnumSource(value = TwinRow.class, names = {"GEMM_LT_64", "GEMM_64"}, mode = EnumSource.Mode.EXCLUDE)
    void everyRowRunsAndLeavesNothingBehind(TwinRow row) {
        List<Background<Integer>> answering = new CopyOnWriteArrayList<>();
        Simulated sim = gpu(answering);
        Twin.Measurement m = Twin.measure(row, N, sim.cuda, KERNELS, 4096);
        for (Background<Integer> gpuThread : answering) {
            assertEquals(N / 2 + N, gpuThread.join(), "pings the ping-pong kernel answered");
        }

        assertTrue(m.totalNanos() > 0, "timed " + m.totalNanos() + " ns");
        assertTrue(m.allocatedBytes() >= 0, "allocated " + m.allocatedBytes());
        assertEquals(List.of(), sim.gpu.violations());
        assertEquals(0, sim.gpu.liveDeviceAllocations(), "device allocations left");
        assertEquals(0, sim.gpu.liveHostAllocations(), "pinned allocations left");
        assertEquals(0, sim.gpu.liveModules(), "modules left");
        assertEquals(0, sim.gpu.liveEvents(), "events left");
    }

    @ParameterizedTest
    @EnumSource(value = TwinRow.class, names = {"LAUNCH_EMPTY", "LAUNCH_FOUR_PREPARED", "LAUNCH_FOUR_SETTERS",
        "LAUNCH_SYNC", "ISSUE_LAUNCH"})
    void aLaunchRowLaunchesAWarmUpOfHalfNThenN(TwinRow row) {
        Simulated sim = gpu();
        Twin.measure(row, N, sim.cuda, KERNELS, 4096);

        assertEquals(N / 2 + N, sim.gpu.launches());
    }

    @Test
    void theRoundTripRowLaunchesOneKernelForEveryOperationOfTheRunAndEachIsOneRoundTrip() {
        List<Background<Integer>> answering = new CopyOnWriteArrayList<>();
        Simulated sim = gpu(answering);
        Twin.measure(TwinRow.MAPPED_WORD_ROUND_TRIP, N, sim.cuda, KERNELS, 4096);

        assertEquals(1, sim.gpu.launches(), "the kernel is launched once per run");
        assertEquals(1, answering.size());
        assertEquals(N / 2 + N, answering.get(0).join(), "the warm-up's pings and the timed ones, each answered");
        assertEquals(N / 2 + N, Twin.operations(TwinRow.MAPPED_WORD_ROUND_TRIP, N));
    }

    @Test
    void theRoundTripRowFailsWhenTheKernelGaveUp() {
        Simulated sim = new Simulated();
        sim.gpu.kernelBody("pingpong", l -> MemorySegment.ofAddress(l.pointer(1)).reinterpret(4)
                .set(ValueLayout.JAVA_INT, 0, TwinWorkload.GAVE_UP));

        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> Twin.measure(TwinRow.MAPPED_WORD_ROUND_TRIP, N, sim.cuda, KERNELS, 4096));
        assertTrue(e.getMessage().contains("gave up waiting for ping 1"), e.getMessage());
        assertEquals(0, sim.gpu.liveHostAllocations(), "a failed run still frees its mapped words");
    }

    @Test
    void theSettersRowFailsWhenItsLaunchesDidNotUseTheArgumentsItSet() {
        Simulated sim = new Simulated(); // its four writes nothing: out[0] stays NaN

        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> Twin.measure(TwinRow.LAUNCH_FOUR_SETTERS, N, sim.cuda, KERNELS, 4096));
        assertTrue(e.getMessage().contains("out[0] is NaN"), e.getMessage());
        assertEquals(0, sim.gpu.liveDeviceAllocations(), "a failed run still closes what it opened");
    }

    @Test
    void aHostIssueRowTakesOnlyWholeBatches() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Twin.measure(TwinRow.ISSUE_REPLAY, 100, gpu().cuda, KERNELS, 4096));
        assertTrue(e.getMessage().contains("multiple of 64"), e.getMessage());
    }

    @ParameterizedTest
    @EnumSource(value = TwinRow.class, names = {"GEMM_LT_64", "GEMM_64"})
    void aGemmRowWhereCublasCannotBeLoadedIsReportedNotRunAndLeavesNothingBehind(TwinRow row) {
        assumeCublasMissing();
        Simulated sim = gpu();

        String line = Twin.line(row, N, sim.cuda, KERNELS, 4096);

        assertTrue(line.startsWith("SKIP gatun " + row.id() + " cuBLAS missing: "), line);
        assertEquals(1, line.lines().count(), line);
        assertEquals(0, sim.gpu.launches(), "nothing ran");
        assertEquals(List.of(), sim.gpu.violations());
        assertEquals(0, sim.gpu.liveDeviceAllocations(), "device allocations left");
        assertEquals(0, sim.gpu.liveModules(), "modules left");
    }

    @Test
    void onlyCublasMissingMakesAGemmRowNotRunAnotherUnavailabilityFailsIt() {
        // The driver's own unavailability (here: stream creation, before the row asks for cuBLAS)
        // is a failure of the run, not a row this machine cannot run.
        Interposer interposer = Interposer.over(new FakeDriverApi());
        CudaUnavailableException driver = new CudaUnavailableException("cuStreamCreate needs a newer driver", List.of());
        interposer.around((function, args, real) -> {
            if (function.startsWith("cuStreamCreate")) {
                throw driver;
            }
            return real.call();
        });
        CudaUnavailableException e = assertThrows(CudaUnavailableException.class,
                () -> Twin.line(TwinRow.GEMM_64, N, new Simulated(interposer).cuda, KERNELS, 4096));
        assertEquals(driver.getMessage(), e.getMessage());
    }

    @Test
    void aGemmRowTakesOnlyWholeBatches() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Twin.measure(TwinRow.GEMM_64, 100, gpu().cuda, KERNELS, 4096));
        assertTrue(e.getMessage().contains("multiple of 64 for gemm_64"), e.getMessage());
    }

    @Test
    void aSkipLineIsOneLineWithTheImplRowAndReason() {
        assertEquals("SKIP c gemm_64 cuBLAS missing: libcublasLt.so.13 not found",
                Twin.skip("c", TwinRow.GEMM_64, " cuBLAS missing:\n libcublasLt.so.13   not found\n"));
    }

    /** The GEMM rows' skip is what this machine shows: where cuBLAS loads (as Gatun searches for it), those tests do not apply. */
    static void assumeCublasMissing() {
        boolean loads;
        try {
            BlasLibrary.CUBLASLT.open();
            BlasLibrary.CUBLAS.open();
            loads = true;
        } catch (CudaUnavailableException e) {
            loads = false;
        }
        Assumptions.assumeFalse(loads, "cuBLAS loads on this machine: the simulated GEMM rows cannot show its absence");
    }

    @Test
    void theResultLineCarriesRowNTotalAndBytes() {
        assertEquals("TWIN gatun replay_10 20000 123456789 0", new Twin.Measurement(123456789, 0).line(TwinRow.REPLAY_10, 20000));
    }

    @Test
    void listNamesEveryRowWithItsNAndWhetherItHasACTwinAndABareTwin() throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int exit = Twin.run(new String[] {"--list"}, new PrintStream(out, true, StandardCharsets.UTF_8), System.err);

        assertEquals(0, exit);
        List<String> lines = out.toString(StandardCharsets.UTF_8).lines().toList();
        assertEquals(TwinRow.values().length, lines.size());
        assertTrue(lines.contains("launch_empty 100000 c -"), lines.toString());
        assertTrue(lines.contains("prepare_four 20000 - -"), lines.toString());
        assertTrue(lines.contains("event_record_query " + TwinRow.EVENT_RECORD_QUERY.n() + " c bare"), lines.toString());
        assertTrue(lines.contains("gemm_64 " + TwinRow.GEMM_64.n() + " c bare"), lines.toString());
    }

    @Test
    void aRowWithoutABareTwinIsReportedNotRunByTwinBare() throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int exit = Twin.run(new String[] {"--bare", "launch_empty", "640", "twins.ptx"}, new PrintStream(out, true, StandardCharsets.UTF_8),
                System.err);

        assertEquals(0, exit);
        assertEquals("SKIP bare launch_empty no bare FFM twin for this row", out.toString(StandardCharsets.UTF_8).strip());
    }

    @Test
    void wrongArgumentsPrintTheUsageAndExitTwo() throws IOException {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = Twin.run(new String[] {"launch_empty"}, System.out, new PrintStream(err, true, StandardCharsets.UTF_8));

        assertEquals(2, exit);
        assertTrue(err.toString(StandardCharsets.UTF_8).startsWith("usage: Twin ROW N PTX_FILE"));
    }
}
