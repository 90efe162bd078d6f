package dev.gatun.cuda.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.ModuleImage;
import dev.gatun.cuda.testing.Ptx;
import dev.gatun.cuda.testing.Simulated;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The Java twin on the simulated driver: every row runs, as the method says, and cleans up. */
class TwinTest {

    /** The PTX the twins share, as the simulated driver reads it (entry signatures only). */
    private static final ModuleImage KERNELS = ModuleImage.ptx("twins.ptx",
            Ptx.module("empty") + Ptx.module("four", "u64", "u32", "f32", "u64"));

    private static final int N = 2 * TwinRow.BATCH;

    /** A simulated GPU whose {@code four} computes out[i] = a * in[i] for i < n, as twins.cu does. */
    private static Simulated gpu() {
        Simulated sim = new Simulated();
        sim.gpu.kernelBody("four", l -> {
            MemorySegment out = l.memory(l.pointer(0), 4L * TwinRow.FOUR_ELEMENTS);
            MemorySegment in = l.memory(l.pointer(3), 4L * TwinRow.FOUR_ELEMENTS);
            for (int i = 0; i < Math.min(l.i32(1), l.gridX() * l.blockX()); i++) {
                out.setAtIndex(ValueLayout.JAVA_FLOAT, i, l.f32(2) * in.getAtIndex(ValueLayout.JAVA_FLOAT, i));
            }
        });
        return sim;
    }

    @ParameterizedTest
    @EnumSource(TwinRow.class)
    void everyRowRunsAndLeavesNothingBehind(TwinRow row) {
        Simulated sim = gpu();
        Twin.Measurement m = Twin.measure(row, N, sim.cuda, KERNELS, 4096);

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

    @Test
    void theResultLineCarriesRowNTotalAndBytes() {
        assertEquals("TWIN gatun replay_10 20000 123456789 0", new Twin.Measurement(123456789, 0).line(TwinRow.REPLAY_10, 20000));
    }

    @Test
    void listNamesEveryRowWithItsNAndWhetherItHasACTwin() throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int exit = Twin.run(new String[] {"--list"}, new PrintStream(out, true, StandardCharsets.UTF_8), System.err);

        assertEquals(0, exit);
        List<String> lines = out.toString(StandardCharsets.UTF_8).lines().toList();
        assertEquals(TwinRow.values().length, lines.size());
        assertTrue(lines.contains("launch_empty 100000 c"), lines.toString());
        assertTrue(lines.contains("prepare_four 20000 -"), lines.toString());
    }

    @Test
    void wrongArgumentsPrintTheUsageAndExitTwo() throws IOException {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = Twin.run(new String[] {"launch_empty"}, System.out, new PrintStream(err, true, StandardCharsets.UTF_8));

        assertEquals(2, exit);
        assertTrue(err.toString(StandardCharsets.UTF_8).startsWith("usage: Twin ROW N PTX_FILE"));
    }
}
