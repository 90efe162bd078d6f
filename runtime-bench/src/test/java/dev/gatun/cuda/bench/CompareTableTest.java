package dev.gatun.cuda.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class CompareTableTest {

    private static final double EPS = 1e-9;

    /** The lines of {@code rounds} rounds of one row: C then Gatun, microseconds per operation given. */
    private static List<String> rounds(TwinRow row, double[] c, double[] gatun, long gatunBytesPerRun) {
        List<String> lines = new ArrayList<>();
        for (int r = 0; r < gatun.length; r++) {
            lines.add("ROUND " + (r + 1));
            if (r < c.length) {
                lines.add("TWIN c " + row.id() + " " + row.n() + " " + Math.round(c[r] * 1e3 * row.n()) + " -");
            }
            lines.add("TWIN gatun " + row.id() + " " + row.n() + " " + Math.round(gatun[r] * 1e3 * row.n()) + " "
                    + gatunBytesPerRun);
        }
        return lines;
    }

    private static CompareTable.Summary summary(TwinRow row, List<String> lines) {
        return CompareTable.parse(lines).summary(row);
    }

    @Test
    void theRatioIsTheMedianOfPerRoundRatiosNotTheRatioOfMedians() {
        double[] c = {2.0, 4.0, 3.0, 10.0, 3.5};
        double[] gatun = {2.2, 4.0, 3.3, 10.0, 5.25};
        CompareTable.Summary s = summary(TwinRow.LAUNCH_EMPTY, rounds(TwinRow.LAUNCH_EMPTY, c, gatun, 0));

        assertEquals(3.5, s.c(), EPS);
        assertEquals(4.0, s.gatun(), EPS);
        // per-round ratios 1.1, 1.0, 1.1, 1.0, 1.5: median 1.1, where 4.0 / 3.5 would say 1.14
        assertEquals(1.1, s.ratio(), EPS);
        assertEquals(1.0, s.ratioMin(), EPS);
        assertEquals(1.5, s.ratioMax(), EPS);
        assertEquals(5, s.pairs());
        assertEquals(Verdict.State.MISSED, s.verdict().state());
        assertEquals("NO: 1.10× > 1.05×", s.verdict().cell());
    }

    @Test
    void slicesOfOneSameProcessRoundArePairedSliceBySlice() {
        // As SameProcess --slices writes them: the script's ROUND 1, then sub-rounds 100 and 101,
        // each a pair of its own; the slice's runs are N/2 each.
        TwinRow row = TwinRow.ALLOC_STREAM_ORDERED;
        long half = row.n() / 2;
        List<String> lines = List.of("ROUND 1",
                "ROUND 100", "TWIN c " + row.id() + " " + half + " " + half * 1000 + " -",
                "TWIN gatun " + row.id() + " " + half + " " + half * 1100 + " 0",
                "ROUND 101", "TWIN c " + row.id() + " " + half + " " + half * 2000 + " -",
                "TWIN gatun " + row.id() + " " + half + " " + half * 2600 + " 0");
        CompareTable.Summary s = summary(row, lines);
        assertEquals(2, s.pairs());
        assertEquals(1.1, s.ratioMin(), EPS); // 1.1 µs against 1.0 µs, in the first slice
        assertEquals(1.3, s.ratioMax(), EPS); // 2.6 µs against 2.0 µs, in the second
        String report = CompareTable.parse(lines).render();
        assertTrue(report.startsWith("Gatun against C: 1 round of interleaved runs"), report);
        assertTrue(report.contains("in slices of the N shown, each slice a pair"), report);
        assertTrue(report.contains("| " + row.title() + " | " + String.format(java.util.Locale.ROOT, "%,d", half) + " |"),
                report);
    }

    @Test
    void compiledLinesAreCountedPerTwinAndANoIsANote() {
        List<String> lines = new ArrayList<>(rounds(TwinRow.EVENT_RECORD_QUERY, new double[] {0.5, 0.5},
                new double[] {0.52, 0.52}, 0));
        lines.add("COMPILED gatun event_record_query yes dev.gatun.cuda.bench.Twin::loop: 1 C2 compilations");
        lines.add("COMPILED bare event_record_query yes dev.gatun.cuda.bench.BareTwin::eventLoop: 1 C2 compilations");
        lines.add("COMPILED gatun event_record_query yes dev.gatun.cuda.bench.Twin::loop: 2 C2 compilations");
        lines.add("COMPILED bare event_record_query no dev.gatun.cuda.bench.BareTwin::eventLoop: 0 C2 compilations");
        String table = CompareTable.parse(lines).render();

        assertTrue(table.contains("- event_record_query: bare 1/2 gatun 2/2\n"), table);
        assertTrue(table.contains("the bare twin's timed loop of event_record_query was not C2's code when the row's "
                + "reported runs began, so its ratio partly measures the JIT: dev.gatun.cuda.bench.BareTwin::eventLoop: "
                + "0 C2 compilations"), table);
        List<String> bad = new ArrayList<>(lines);
        bad.add("COMPILED gatun event_record_query maybe x");
        assertTrue(CompareTable.parse(bad).render().contains("ignored (neither yes nor no: maybe)"));
    }

    @Test
    void bareRunsGetTheirRatioToCAndGatunsRatioToThemPerRound() {
        TwinRow row = TwinRow.EVENT_RECORD_QUERY;
        long n = row.n();
        List<String> lines = new ArrayList<>();
        double[][] cBareGatun = {{1.0, 1.1, 1.2}, {2.0, 2.4, 2.4}, {1.0, 1.05, 1.26}};
        for (int r = 0; r < cBareGatun.length; r++) {
            lines.add("ROUND " + (r + 1));
            lines.add("TWIN c " + row.id() + " " + n + " " + Math.round(cBareGatun[r][0] * 1e3 * n) + " -");
            lines.add("TWIN bare " + row.id() + " " + n + " " + Math.round(cBareGatun[r][1] * 1e3 * n) + " -");
            lines.add("TWIN gatun " + row.id() + " " + n + " " + Math.round(cBareGatun[r][2] * 1e3 * n) + " 0");
        }
        CompareTable.Summary s = summary(row, lines);
        assertEquals(1.1, s.bareRatio(), EPS); // bare/C per round 1.1, 1.2, 1.05
        assertEquals(1.2 / 1.1, s.gatunOverBare(), EPS); // Gatun/bare per round 1.0909, 1.0, 1.2
        String report = CompareTable.parse(lines).render();
        assertTrue(report.contains("| bare FFM/C | Gatun/bare FFM |"), report);
        assertFalse(CompareTable.parse(rounds(row, new double[] {1, 1, 1, 1, 1}, new double[] {1, 1, 1, 1, 1}, 0)).render()
                .contains("bare FFM"), "no bare column without bare runs");
    }

    @Test
    void baselineRunsGetTheirOwnRatioToCAndColumnsOnlyWhenPresent() {
        TwinRow row = TwinRow.EVENT_RECORD_QUERY;
        double[] c = {1.0, 2.0, 1.0};
        double[] gatun = {1.1, 2.0, 1.0};
        List<String> lines = rounds(row, c, gatun, 0);
        assertTrue(!CompareTable.parse(lines).render().contains("baseline/C"), "no baseline: no baseline columns");
        double[] before = {1.3, 2.4, 1.1}; // per-round ratios 1.3, 1.2, 1.1: median 1.2
        for (int r = 0; r < before.length; r++) {
            lines.add(lines.indexOf("ROUND " + (r + 2)) < 0 ? lines.size() : lines.indexOf("ROUND " + (r + 2)),
                    "TWIN baseline " + row.id() + " " + row.n() + " " + Math.round(before[r] * 1e3 * row.n()) + " "
                            + 16L * row.n());
        }
        CompareTable.Summary s = summary(row, lines);
        assertEquals(1.2, s.baselineRatio(), EPS);
        assertEquals(16.0, s.baselineBytes(), EPS);
        assertEquals(1.0, s.ratio(), EPS, "Gatun's own ratio is unchanged by the baseline's runs");
        String table = CompareTable.parse(lines).render();
        assertTrue(table.contains("| baseline/C | B/op (baseline) |") && table.contains("| 1.20 | 16.0 |"), table);
    }

    @Test
    void fivePairsWithinTheRatioAndNoAllocationMeetTheGoal() {
        double[] c = {3.46, 3.50, 3.40, 3.47, 3.44};
        double[] gatun = {3.50, 3.52, 3.45, 3.49, 3.46};
        CompareTable.Summary s = summary(TwinRow.REPLAY_1, rounds(TwinRow.REPLAY_1, c, gatun, 0));

        assertEquals(Verdict.State.MET, s.verdict().state());
        assertEquals("yes", s.verdict().cell());
    }

    @Test
    void aBatchedCopyRowIsJudgedByItsRatioToTheOneAtATimeRowOfTheSameRound() {
        double[] c = {40, 40, 40, 40, 40};
        double[] each = {100, 120, 90, 100, 110};
        double[] batched = {60, 60, 60, 80, 55}; // per-round 0.6, 0.5, 0.667, 0.8, 0.5: median 0.6
        List<String> lines = rounds(TwinRow.COPY_EACH_H2D, c, each, 0);
        List<String> batchLines = rounds(TwinRow.COPY_BATCH_H2D, c, batched, 0);
        for (int r = 0; r < batched.length; r++) { // each round's lines after that round's one-at-a-time runs
            int at = lines.indexOf("ROUND " + (r + 2));
            lines.addAll(at < 0 ? lines.size() : at, batchLines.subList(3 * r + 1, 3 * r + 3));
        }
        CompareTable.Summary s = summary(TwinRow.COPY_BATCH_H2D, lines);
        assertEquals(Verdict.State.MET, s.verdict().state(), s.verdict().cell());
        assertEquals(1.5, s.ratio(), EPS, "its own ratio is still to C");

        batched[2] = 80; // 0.889: the median becomes 0.667 -- still within 0.67
        batched[0] = 90; // 0.9: the median becomes 0.8
        List<String> slower = rounds(TwinRow.COPY_EACH_H2D, c, each, 0);
        slower.addAll(rounds(TwinRow.COPY_BATCH_H2D, c, batched, 0));
        CompareTable.Summary missed = summary(TwinRow.COPY_BATCH_H2D, slower);
        assertEquals("NO: 0.800× > 0.67×", missed.verdict().cell());
        assertTrue(CompareTable.parse(slower).render().contains("≤ 0.67× copy_each_h2d_64x4k"),
                CompareTable.parse(slower).render());

        CompareTable.Summary alone = summary(TwinRow.COPY_BATCH_H2D, rounds(TwinRow.COPY_BATCH_H2D, c, batched, 0));
        assertEquals(Verdict.State.UNDECIDED, alone.verdict().state(), "without the other row nothing is decided");
    }

    @Test
    void fewerThanFivePairsDecideNothing() {
        double[] c = {3.0, 3.0, 3.0, 3.0};
        double[] gatun = {3.0, 3.0, 3.0, 3.0, 3.0}; // the fifth round's C run failed
        List<String> lines = rounds(TwinRow.LAUNCH_EMPTY, c, gatun, 0);
        lines.add("FAIL c launch_empty 5 124");
        CompareTable table = CompareTable.parse(lines);
        CompareTable.Summary s = table.summary(TwinRow.LAUNCH_EMPTY);

        assertEquals(4, s.pairs());
        assertEquals(5, s.gatunRuns());
        assertEquals(Verdict.State.UNDECIDED, s.verdict().state());
        assertEquals("undecided: 4 pairs (< 5)", s.verdict().cell());
        assertTrue(table.render().contains("c twin of launch_empty failed in round 5 (exit status 124)"),
                table.render());
    }

    @Test
    void anAllocationOnThePathMissesTheZeroBytesGoalEvenWithinTheRatio() {
        double[] same = {3.0, 3.0, 3.0, 3.0, 3.0};
        // 48 bytes per operation over N operations
        long bytes = 48L * TwinRow.READBACK.n();
        CompareTable.Summary s = summary(TwinRow.READBACK, rounds(TwinRow.READBACK, same, same, bytes));

        assertEquals(48, s.gatunBytes(), EPS);
        assertEquals(Verdict.State.MISSED, s.verdict().state());
        assertEquals("NO: 48.0 B/op", s.verdict().cell());
    }

    @Test
    void aFewBytesOverAWholeRunCountAsNoAllocation() {
        double[] same = {3.0, 3.0, 3.0, 3.0, 3.0};
        CompareTable.Summary s = summary(TwinRow.READBACK, rounds(TwinRow.READBACK, same, same, 4096));

        assertTrue(s.gatunBytes() < CompareTable.BYTES_TOLERANCE, "B/op " + s.gatunBytes());
        assertEquals(Verdict.State.MET, s.verdict().state());
    }

    @Test
    void anAllocationRowMayAllocateItsHandleButNothingMore() {
        double[] c = {1.0, 1.0, 1.0, 1.0, 1.0};
        double[] gatun = {1.05, 1.05, 1.05, 1.05, 1.05};
        TwinRow row = TwinRow.ALLOC_STREAM_ORDERED;
        long n = row.n();
        CompareTable.Summary handleAndSampling = summary(row, rounds(row, c, gatun, 16L * n + 3L * n / 10));
        CompareTable.Summary more = summary(row, rounds(row, c, gatun, 16L * n + 9L * n / 10));

        assertEquals(Verdict.State.MET, handleAndSampling.verdict().state(), handleAndSampling.verdict().cell());
        assertEquals(Verdict.State.MISSED, more.verdict().state());
        assertEquals("NO: 16.9 B/op", more.verdict().cell());
        String table = CompareTable.parse(rounds(row, c, gatun, 16L * n)).render();
        assertTrue(table.contains(", ≤ 16 B/op | yes |"), table);
    }

    @Test
    void bandwidthRowsCompareGatunsBandwidthWithCs() {
        // 256 MiB in 5,000 µs is 53.7 GB/s; in 5,100 µs 52.6 GB/s
        double[] c = {5000, 5000, 5000, 5000, 5000};
        double[] gatun = {5100, 5000, 5100, 4900, 5100};
        CompareTable table = CompareTable.parse(rounds(TwinRow.UPLOAD, c, gatun, 0));
        CompareTable.Summary s = table.summary(TwinRow.UPLOAD);

        assertEquals(5000.0 / 5100, s.ratio(), EPS);
        assertEquals(5000.0 / 4900, s.ratioMax(), EPS);
        assertEquals(Verdict.State.MET, s.verdict().state()); // 0.980 ≥ 0.98
        assertTrue(table.render().contains("| pinned upload 256 MiB | 100 | 53.7 GB/s | 52.6 GB/s | 0.980 (0.980–1.02) | 5 |"),
                table.render());
    }

    @Test
    void hostIssueRowsAreJudgedByNanosecondsOverC() {
        double[] c = {0.50, 0.52, 0.51, 0.50, 0.55};
        double[] gatun = {0.56, 0.60, 0.55, 0.57, 0.58}; // C + 60, 80, 40, 70, 30 ns: median 60
        CompareTable table = CompareTable.parse(rounds(TwinRow.ISSUE_LAUNCH, c, gatun, 0));
        CompareTable.Summary s = table.summary(TwinRow.ISSUE_LAUNCH);

        assertEquals(60, s.extraNanos(), 1e-6);
        assertEquals("NO: C + 60.0 ns", s.verdict().cell());
        assertTrue(table.render().contains(", C + 60.0 ns |"), table.render());
    }

    @Test
    void prepareHasNoCTwinAndAnAbsoluteGoal() {
        double[] none = {};
        CompareTable.Summary fast = summary(TwinRow.PREPARE_FOUR, rounds(TwinRow.PREPARE_FOUR, none,
                new double[] {1.5, 1.9, 1.7, 2.4, 1.8}, 1000L * TwinRow.PREPARE_FOUR.n()));
        CompareTable.Summary slow = summary(TwinRow.PREPARE_FOUR, rounds(TwinRow.PREPARE_FOUR, none,
                new double[] {8.9, 9.1, 8.7, 9.0, 9.3}, 0));

        assertEquals(0, fast.pairs());
        assertEquals(1.8, fast.gatun(), EPS);
        assertEquals(Verdict.State.MET, fast.verdict().state(), "prepare may allocate: its goal is time only");
        assertEquals("NO: 9.00 µs > 2 µs", slow.verdict().cell());
    }

    @Test
    void jmhLinesFillTheirRowsBytesAndScore() {
        List<String> lines = rounds(TwinRow.REPLAY_10, new double[] {6.1}, new double[] {6.0}, 0);
        lines.add("JMH GraphReplayBenchmark.replayGraph:kernels=10 0.075 6.06 us/op");
        lines.add("JMH TransferBenchmark.uploadPinned 1020.5 205.0 ops/s");
        CompareTable table = CompareTable.parse(lines);

        CompareTable.Jmh jmh = table.summary(TwinRow.REPLAY_10).jmh().orElseThrow();
        assertEquals(0.075, jmh.bytesPerOp(), EPS);
        assertEquals(6.06, jmh.score(), EPS);
        String text = table.render();
        assertTrue(text.contains("| 0.075 | 6.06 µs | 0 B/op |"), text);
        assertTrue(text.contains("| 1021 | 55.0 GB/s |"), text); // 205 transfers of 256 MiB per second
    }

    @Test
    void metaAndNotesFrameTheTableAndMalformedLinesAreNamedNotFatal() {
        List<String> lines = new ArrayList<>(List.of(
                "META commit 4faf23a (clean)",
                "META machine NVIDIA H200, driver 580.159.04",
                "NOTE another process used the GPU: 4242 python",
                "ROUND 1",
                "TWIN gatun launch_empty 100000 notanumber 0",
                "TWIN gatun no_such_row 100 1000 0",
                "[main] INFO a log line that is not a result"));
        String text = CompareTable.parse(lines).render();

        assertTrue(text.startsWith("Gatun against C: 1 round of interleaved runs"), text);
        assertTrue(text.contains("- commit: 4faf23a (clean)\n- machine: NVIDIA H200, driver 580.159.04\n"), text);
        assertTrue(text.contains("- another process used the GPU: 4242 python"), text);
        assertTrue(text.contains("- line 5 ignored"), text);
        assertTrue(text.contains("- line 6 ignored (no benchmark row 'no_such_row'"), text);
        assertTrue(!text.contains("a log line"), text);
    }

    @Test
    void theSummaryCountsTheGoalsOfTheRowsThatRan() {
        double[] same = {3.0, 3.0, 3.0, 3.0, 3.0};
        List<String> lines = rounds(TwinRow.LAUNCH_EMPTY, same, same, 0);
        lines.addAll(rounds(TwinRow.LAUNCH_SYNC, same, new double[] {4.0, 4.0, 4.0, 4.0, 4.0}, 0));
        lines.add("FAIL gatun replay_1 1 1");
        String text = CompareTable.parse(lines).render();

        assertTrue(text.contains("| empty launch | 100,000 | 3.00 µs | 3.00 µs | 1.00 (1.00–1.00) | 5 |"), text);
        assertTrue(text.contains("| graph replay, 1 kernel | 100,000 | – | – | – | 0 |"), text);
        assertTrue(!text.contains("| graph replay, 10 kernels"), "a row that was not run is left out:\n" + text);
        assertTrue(text.contains("Goals: 1 met, 1 missed, 1 undecided (fewer than 5 pairs, or no B/op), 0 not run (a library"
                + " missing), of 3 rows with a goal; " + (TwinRow.values().length - 3) + " of " + TwinRow.values().length
                + " rows were not run."), text);
    }

    @Test
    void aGemmRowIsJudgedAsEveryRatioRowIs() {
        double[] c = {2.0, 2.0, 2.0, 2.0, 2.0};
        CompareTable.Summary met = summary(TwinRow.GEMM_LT_64, rounds(TwinRow.GEMM_LT_64, c,
                new double[] {2.06, 2.08, 2.1, 2.0, 2.2}, 0));
        CompareTable.Summary missed = summary(TwinRow.GEMM_64, rounds(TwinRow.GEMM_64, c,
                new double[] {2.2, 2.2, 2.2, 2.0, 2.0}, 0));
        CompareTable.Summary allocating = summary(TwinRow.GEMM_64, rounds(TwinRow.GEMM_64, c, c, 16L * TwinRow.GEMM_64.n()));

        assertEquals(1.04, met.ratio(), EPS);
        assertEquals(Verdict.State.MET, met.verdict().state());
        assertEquals("NO: 1.10× > 1.05×", missed.verdict().cell());
        assertEquals("NO: 16.0 B/op", allocating.verdict().cell());
        String row = CompareTable.parse(rounds(TwinRow.GEMM_64, c, c, 0)).render().lines()
                .filter(l -> l.startsWith("| " + TwinRow.GEMM_64.title() + " |")).findFirst().orElseThrow();
        assertTrue(row.endsWith("| ≤ 1.05× C, 0 B/op | yes |"), row);
    }

    @Test
    void aRowNoTwinCouldRunIsNotRunWithTheReasonsAndCountedApart() {
        List<String> lines = new ArrayList<>(List.of("ROUND 1",
                "SKIP c gemm_64 cuBLAS missing: libcublasLt.so.13 not found",
                "SKIP gatun gemm_64 cuBLAS missing: cuBLASLt was not found",
                "ROUND 2",
                "SKIP c gemm_64 cuBLAS missing: libcublasLt.so.13 not found"));
        String text = CompareTable.parse(lines).render();

        CompareTable.Summary s = summary(TwinRow.GEMM_64, lines);
        assertEquals(Verdict.State.NOT_RUN, s.verdict().state());
        assertEquals("not run: c: cuBLAS missing: libcublasLt.so.13 not found; gatun: cuBLAS missing: cuBLASLt was not found",
                s.verdict().cell());
        assertTrue(text.contains("| " + TwinRow.GEMM_64.title() + " | 128,000 | – | – | – | 0 |"), text);
        assertTrue(text.contains("0 undecided (fewer than 5 pairs, or no B/op), 1 not run (a library missing), of 1 rows"),
                text);
    }

    @Test
    void aTwinThatSkippedARowOthersRanIsANoteAndTheRowIsJudged() {
        double[] same = {3.0, 3.0, 3.0, 3.0, 3.0};
        List<String> lines = rounds(TwinRow.GEMM_LT_64, same, same, 0);
        lines.add("SKIP baseline gemm_lt_64 the baseline jar has no row gemm_lt_64");
        String text = CompareTable.parse(lines).render();

        assertEquals(Verdict.State.MET, summary(TwinRow.GEMM_LT_64, lines).verdict().state());
        assertTrue(text.contains("- a twin did not run gemm_lt_64 (baseline: the baseline jar has no row gemm_lt_64)"), text);
        assertEquals(text, CompareTable.parse(lines).render().replace("\r", ""), "rendering twice says the same");
    }
}
