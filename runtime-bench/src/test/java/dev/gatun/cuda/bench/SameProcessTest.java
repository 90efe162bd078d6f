package dev.gatun.cuda.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The same-process runner's arguments; its runs need a GPU and the C library (compare, on the GPU host). */
class SameProcessTest {

    @Test
    void aRowTakesItsOwnNUnlessOneIsGiven() {
        assertEquals(new SameProcess.Job(TwinRow.ALLOC_STREAM_ORDERED, TwinRow.ALLOC_STREAM_ORDERED.n()),
                SameProcess.Job.parse("alloc_stream_ordered"));
        assertEquals(new SameProcess.Job(TwinRow.EVENT_RECORD_QUERY, 640), SameProcess.Job.parse("event_record_query:640"));
    }

    @Test
    void aRowWithoutACTwinIsRefused() {
        TwinRow alone = java.util.Arrays.stream(TwinRow.values()).filter(r -> !r.hasC()).findFirst().orElseThrow();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> SameProcess.Job.parse(alone.id()));
        assertTrue(e.getMessage().contains("no C twin"), e.getMessage());
    }

    @Test
    void tooFewArgumentsPrintTheUsage() throws Exception {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status = SameProcess.run(new String[] {"libtwins.so", "twins.ptx"}, new PrintStream(new ByteArrayOutputStream()),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(2, status);
        assertTrue(err.toString(StandardCharsets.UTF_8).startsWith("usage: SameProcess"));
    }

    @Test
    void slicesOutsideOneToAHundredAreRefusedBeforeAnythingRuns() throws Exception {
        for (String slices : new String[] {"0", "101"}) {
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            int status = SameProcess.run(new String[] {"libtwins.so", "twins.ptx", "1", "--slices", slices,
                "alloc_stream_ordered"}, new PrintStream(new ByteArrayOutputStream()), new PrintStream(err, true,
                        StandardCharsets.UTF_8));
            assertEquals(2, status, slices);
            assertTrue(err.toString(StandardCharsets.UTF_8).contains("--slices takes 1 to 100, not " + slices),
                    err.toString(StandardCharsets.UTF_8));
        }
    }

    @Test
    void theTwoDriverCallRowsAndTheGemmRowsHaveABareTwinAndNoOtherRow() {
        assertTrue(BareTwin.covers(TwinRow.ALLOC_STREAM_ORDERED));
        assertTrue(BareTwin.covers(TwinRow.EVENT_RECORD_QUERY));
        assertTrue(BareTwin.covers(TwinRow.GEMM_LT_64));
        assertTrue(BareTwin.covers(TwinRow.GEMM_64));
        assertTrue(BareTwin.covers(TwinRow.ALLOC_FROM_POOL));
        assertTrue(BareTwin.covers(TwinRow.ALLOC_UNPOOLED));
        assertFalse(BareTwin.covers(TwinRow.ALLOC_POOLED)); // a pool hit makes no driver call: nothing to floor
        assertFalse(BareTwin.covers(TwinRow.LAUNCH_EMPTY));
        assertFalse(BareTwin.covers(TwinRow.ISSUE_LAUNCH));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> BareTwin.measure(TwinRow.LAUNCH_EMPTY, 10, MemorySegment.NULL)); // refused before the PTX is read
        assertTrue(e.getMessage().contains("only event_record_query, alloc_unpooled, alloc_stream_ordered, alloc_from_pool, gemm_lt_64, gemm_64 have"),
                e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> BareTwin.loopOf(TwinRow.LAUNCH_EMPTY));
        assertThrows(IllegalArgumentException.class, () -> BareTwin.measure(TwinRow.EVENT_RECORD_QUERY, 0, MemorySegment.NULL));
    }

    @Test
    void theBareViaFlagTakesItsThreeValuesInAnyCaseAndRefusesAnyOther() {
        assertEquals(BareTwin.Via.JAVA, BareTwin.Via.of("java"));
        assertEquals(BareTwin.Via.STEP, BareTwin.Via.of("step"));
        assertEquals(BareTwin.Via.LOOP, BareTwin.Via.of("LOOP"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> BareTwin.Via.of("lop"));
        assertEquals("gatun.bench.bareVia is 'lop': give java, step or loop", e.getMessage());
    }

    @Test
    void eachBareRowNamesItsOwnLoopForTheCompileCheck() {
        assertEquals(new CompileWatch.Method(BareTwin.class.getName(), "allocateLoop", BareTwin.class.getClassLoader()),
                BareTwin.loopOf(TwinRow.ALLOC_STREAM_ORDERED));
        assertEquals(new CompileWatch.Method(BareTwin.class.getName(), "eventLoop", BareTwin.class.getClassLoader()),
                BareTwin.loopOf(TwinRow.EVENT_RECORD_QUERY));
        assertEquals(new CompileWatch.Method(BareTwin.class.getName(), "poolLoop", BareTwin.class.getClassLoader()),
                BareTwin.loopOf(TwinRow.ALLOC_FROM_POOL));
        assertEquals(new CompileWatch.Method(BareTwin.class.getName(), "unpooledLoop", BareTwin.class.getClassLoader()),
                BareTwin.loopOf(TwinRow.ALLOC_UNPOOLED));
        assertEquals(new CompileWatch.Method(BareGemm.class.getName(), "matmulLoop", BareGemm.class.getClassLoader()),
                BareTwin.loopOf(TwinRow.GEMM_LT_64));
        assertEquals(new CompileWatch.Method(BareGemm.class.getName(), "gemmLoop", BareGemm.class.getClassLoader()),
                BareTwin.loopOf(TwinRow.GEMM_64));
    }

    @Test
    void aGemmRowsBareTwinTakesOnlyWholeBatches() {
        // Refused before the libraries are looked at: the same answer with or without cuBLAS.
        for (int n : new int[] {0, -64, 100, TwinRow.BATCH + 1}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> BareTwin.measure(TwinRow.GEMM_64, n, MemorySegment.NULL), "N " + n);
            assertTrue(e.getMessage().contains("a positive multiple of 64"), e.getMessage());
        }
    }

    @Test
    void aGemmRowsBareTwinWhereCublasIsMissingIsReportedNotRunBeforeAnyDriverCall() {
        TwinTest.assumeCublasMissing();
        for (TwinRow row : new TwinRow[] {TwinRow.GEMM_LT_64, TwinRow.GEMM_64}) {
            String line = SameProcess.runBare(new SameProcess.Job(row, 2 * TwinRow.BATCH), MemorySegment.NULL);
            // Before any driver call: where there is no driver (this machine), one would have failed the run instead.
            assertTrue(line.startsWith("SKIP bare " + row.id() + " cuBLAS missing: libcublasLt.so.13 could not be opened"
                    + " by the dynamic loader"), line);
            assertTrue(line.endsWith("libcublas.so.13, which imports it, was not tried"), line);
            assertEquals(1, line.lines().count(), line);
        }
    }

    @Test
    void anUnknownFlagIsRefused() throws Exception {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status = SameProcess.run(new String[] {"libtwins.so", "twins.ptx", "1", "--fast", "yes", "alloc_stream_ordered"},
                new PrintStream(new ByteArrayOutputStream()), new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(2, status);
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("unknown flag --fast"), err.toString(StandardCharsets.UTF_8));
    }
}
