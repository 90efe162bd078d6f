package dev.gatun.cuda.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The comparison table of the {@code compare} script: reads the lines that the script, the two
 * twins and {@link AllocationRun} write, and prints one Markdown table of C against Gatun, row
 * by row, with each row's goal and whether it is met.
 *
 * <p>Lines it reads (anything else is ignored, so a whole log can be fed to it):
 * <pre>
 * META key value...                  shown above the table (commit, date, machine)
 * ROUND r                            the TWIN and FAIL lines after it belong to round r
 * TWIN impl row n total_ns bytes|-   one run of a twin (impl: c, gatun, or baseline: an earlier
 *                                    Gatun jar run beside them, {@code BASELINE_JAR} of the script;
 *                                    or bare: the row's driver calls as bare FFM downcalls, {@link BareTwin})
 * FAIL impl row round exit_status    a run that failed or timed out
 * SKIP impl row reason...            a twin that could not run the row on this machine (cuBLAS
 *                                    missing): a row no twin ran pairs of is "not run: reason"
 * JMH Class.method[:p=v] bytes_per_op score unit   one JMH benchmark under -prof gc
 * COMPILED impl row yes|no detail    whether a Java twin's timed loop was C2's code before the
 *                                    row's reported runs ({@link CompileWatch}); shown under the
 *                                    table, and a "no" in the notes: that row's ratio measured the JIT
 * NOTE text                          shown under the table
 * </pre>
 *
 * <p>A row's C and Gatun values are the medians over rounds of total time / N; its ratio is the
 * median over rounds of the per-round ratio Gatun/C (for bandwidth rows Gatun's bandwidth over
 * C's), shown with its range. A goal is judged only from at least {@link Goal#MIN_PAIRS} pairs.
 * Rows that no line names (not run: a subset was asked for) are left out of the table.
 * A B/op goal ({@link TwinRow#bytesGoal()}: "0 B/op", or "≤ 16 B/op" for the allocation rows,
 * whose operation makes its 16-byte handle) is judged from the Java twin's own count of what the
 * measuring thread allocated (median over rounds): met below the goal plus
 * {@value #BYTES_TOLERANCE} B/op, that is when fewer than one operation in 32 allocates even a
 * further 16-byte object. JMH's figure is shown
 * beside it; it includes the allocation background of JMH's own threads (about 0.2 MB/s, so
 * about 1 KB/op for a 5 ms transfer). With baseline runs, two more columns show the baseline's
 * ratio to C (median of per-round ratios, the same way) and its B/op: before and after from one
 * run, since machine starts differ by a quarter. With bare runs, two more: the bare downcalls'
 * ratio to C and Gatun's to them (medians of per-round ratios): the floor the transition into C
 * sets, and what Gatun costs above it.
 */
public final class CompareTable {

    /** A row meets its B/op goal below the goal plus this many bytes per operation. */
    static final double BYTES_TOLERANCE = 0.5;

    /** A JMH benchmark's result: B/op (median of its measurement iterations) and its score. */
    record Jmh(double bytesPerOp, double score, String unit) {
    }

    /** What the table shows for one row. NaN where nothing was measured. */
    record Summary(TwinRow row, double c, double gatun, double ratio, double ratioMin, double ratioMax, int pairs,
            double extraNanos, int gatunRuns, double gatunBytes, Optional<Jmh> jmh, Verdict verdict,
            double baselineRatio, double baselineBytes, double bareRatio, double gatunOverBare) {
    }

    /** One row's runs, by round: microseconds per operation, and the Java twin's B/op. */
    private static final class Runs {
        final Map<Integer, Double> c = new TreeMap<>();
        final Map<Integer, Double> gatun = new TreeMap<>();
        final Map<Integer, Double> gatunBytes = new TreeMap<>();
        final Map<Integer, Double> baseline = new TreeMap<>();
        final Map<Integer, Double> baselineBytes = new TreeMap<>();
        /** The bare FFM downcalls' runs ({@link BareTwin}), microseconds per operation. */
        final Map<Integer, Double> bare = new TreeMap<>();
        /** The N of its runs (a slice's N when sliced), 0 before any. */
        long n;
    }

    private final Map<TwinRow, Runs> runs = new EnumMap<>(TwinRow.class);
    /** Rows some line names: the table leaves out rows that were not run at all (a ROWS subset). */
    private final Set<TwinRow> named = EnumSet.noneOf(TwinRow.class);
    private final Map<String, Jmh> jmh = new HashMap<>();
    private final Map<String, String> meta = new LinkedHashMap<>();
    /** Whether some rows ran in slices, each a pair of its own. */
    private boolean sliced;
    private final List<String> notes = new ArrayList<>();
    /** Per row, then twin: how many checks found its timed loop C2's code, and how many did not. */
    private final Map<TwinRow, Map<String, int[]>> compiled = new EnumMap<>(TwinRow.class);
    private final TreeSet<Integer> rounds = new TreeSet<>();
    /** Per row, why a twin did not run it ({@code impl: reason}), in the order read. */
    private final Map<TwinRow, Set<String>> skipped = new EnumMap<>(TwinRow.class);

    private CompareTable() {
        for (TwinRow row : TwinRow.values()) {
            runs.put(row, new Runs());
        }
    }

    public static void main(String[] args) throws IOException {
        List<String> lines = new ArrayList<>();
        if (args.length == 0) {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                in.lines().forEach(lines::add);
            }
        }
        for (String file : args) {
            lines.addAll(Files.readAllLines(Path.of(file), StandardCharsets.UTF_8));
        }
        System.out.print(parse(lines).render());
    }

    /** Reads the lines; a malformed line is skipped and named in the notes. */
    static CompareTable parse(List<String> lines) {
        CompareTable table = new CompareTable();
        int round = 0;
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).strip();
            String[] f = line.split("\\s+");
            try {
                switch (f[0]) {
                    case "META" -> {
                        String[] keyValue = line.split("\\s+", 3);
                        table.meta.put(keyValue[1], keyValue.length == 3 ? keyValue[2] : "");
                    }
                    case "ROUND" -> {
                        round = Integer.parseInt(f[1]);
                        if (round < SameProcess.MAX_SLICES) {
                            table.rounds.add(round);
                        } else {
                            table.sliced = true; // a slice's sub-round (SameProcess --slices), within a round
                        }
                    }
                    case "TWIN" -> table.twin(f, round);
                    case "FAIL" -> {
                        table.named.add(TwinRow.byId(f[2]));
                        table.notes.add(f[1] + " twin of " + f[2] + " failed in round " + f[3] + " (exit status " + f[4]
                                + "); its log names the cause");
                    }
                    case "SKIP" -> {
                        TwinRow row = TwinRow.byId(f[2]);
                        table.named.add(row);
                        table.skipped.computeIfAbsent(row, r -> new LinkedHashSet<>())
                                .add(f[1] + ": " + line.split("\\s+", 4)[3]);
                    }
                    case "JMH" -> table.jmh(f);
                    case "NOTE" -> table.notes.add(line.substring(4).strip());
                    case "COMPILED" -> table.compiled(f, line);
                    default -> {
                        // Not a result line (a log line): ignored.
                    }
                }
            } catch (RuntimeException e) {
                table.notes.add("line " + (i + 1) + " ignored (" + e.getMessage() + "): " + line);
            }
        }
        return table;
    }

    private void compiled(String[] f, String line) {
        boolean yes = switch (f[3]) {
            case "yes" -> true;
            case "no" -> false;
            default -> throw new IllegalArgumentException("neither yes nor no: " + f[3]);
        };
        TwinRow row = TwinRow.byId(f[2]);
        compiled.computeIfAbsent(row, r -> new TreeMap<>()).computeIfAbsent(f[1], i -> new int[2])[yes ? 0 : 1]++;
        if (!yes) {
            notes.add("the " + f[1] + " twin's timed loop of " + row.id() + " was not C2's code when the row's reported"
                    + " runs began, so its ratio partly measures the JIT: " + line.split("\\s+", 5)[4]);
        }
    }

    private void jmh(String[] f) {
        Jmh result = new Jmh(Double.parseDouble(f[2]), Double.parseDouble(f[3]), f[4]);
        jmh.put(f[1], result);
        for (TwinRow row : TwinRow.values()) {
            if (row.jmh().equals(f[1])) {
                named.add(row);
            }
        }
    }

    private void twin(String[] f, int round) {
        TwinRow row = TwinRow.byId(f[2]);
        long n = Long.parseLong(f[3]);
        if (n <= 0) {
            throw new IllegalArgumentException("N is " + n);
        }
        double micros = Long.parseLong(f[4]) / 1e3 / n;
        Runs r = runs.get(row);
        r.n = n;
        switch (f[1]) {
            case "c" -> r.c.put(round, micros);
            case "gatun" -> {
                r.gatun.put(round, micros);
                if (!f[5].equals("-")) {
                    r.gatunBytes.put(round, Long.parseLong(f[5]) / (double) n);
                }
            }
            case "baseline" -> {
                r.baseline.put(round, micros);
                if (!f[5].equals("-")) {
                    r.baselineBytes.put(round, Long.parseLong(f[5]) / (double) n);
                }
            }
            case "bare" -> r.bare.put(round, micros);
            default -> throw new IllegalArgumentException("unknown twin '" + f[1] + "'");
        }
        named.add(row);
    }

    /** Per-round ratios of {@code java}'s runs to C's (for bandwidth rows, bandwidth over C's), in round order. */
    private static List<Double> ratios(TwinRow row, Runs r, Map<Integer, Double> java) {
        List<Double> ratios = new ArrayList<>();
        for (Map.Entry<Integer, Double> g : java.entrySet()) {
            Double c = r.c.get(g.getKey());
            if (c != null) {
                // Same N and bytes in both twins: C's time over Gatun's is Gatun's bandwidth over C's.
                ratios.add(row.transferBytes().isPresent() ? c / g.getValue() : g.getValue() / c);
            }
        }
        return ratios;
    }

    /**
     * For a {@link Goal.RowRatioAtMost} goal, the per-round ratios of {@code row}'s Gatun runs to
     * those of the row it names, in round order; empty for any other goal or when that row did not run.
     */
    private List<Double> rowRatios(TwinRow row, Runs r) {
        List<Double> ratios = new ArrayList<>();
        if (row.goal() instanceof Goal.RowRatioAtMost g) {
            Runs other = runs.get(TwinRow.byId(g.row()));
            for (Map.Entry<Integer, Double> mine : r.gatun.entrySet()) {
                Double theirs = other.gatun.get(mine.getKey());
                if (theirs != null) {
                    ratios.add(mine.getValue() / theirs);
                }
            }
        }
        return ratios;
    }

    /** What the table shows for {@code row}. */
    Summary summary(TwinRow row) {
        Runs r = runs.get(row);
        List<Double> ratios = ratios(row, r, r.gatun);
        List<Double> extra = new ArrayList<>();
        for (Map.Entry<Integer, Double> g : r.gatun.entrySet()) {
            Double c = r.c.get(g.getKey());
            if (c != null) {
                extra.add((g.getValue() - c) * 1e3);
            }
        }
        double gatun = Medians.of(r.gatun.values());
        double ratio = Medians.of(ratios);
        double extraNanos = Medians.of(extra);
        double bytes = Medians.of(r.gatunBytes.values());
        List<Double> rowRatios = rowRatios(row, r);
        Verdict verdict = row.goal().judge(new Goal.Evidence(ratios.size(), ratio, extraNanos, r.gatun.size(), gatun,
                rowRatios.size(), Medians.of(rowRatios)));
        if (row.bytesGoal() != TwinRow.NO_BYTES_GOAL) {
            verdict = verdict.and(r.gatunBytes.isEmpty() ? Verdict.undecided("no B/op measured")
                    : bytes < row.bytesGoal() + BYTES_TOLERANCE ? Verdict.met()
                    : Verdict.missed(Goal.number(bytes) + " B/op"));
        }
        if (ratios.isEmpty() && r.gatun.isEmpty() && skipped.containsKey(row)) {
            verdict = Verdict.notRun(String.join("; ", skipped.get(row)));
        }
        return new Summary(row, Medians.of(r.c.values()), gatun, ratio,
                ratios.stream().mapToDouble(Double::doubleValue).min().orElse(Double.NaN),
                ratios.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN), ratios.size(), extraNanos,
                r.gatun.size(), bytes, Optional.ofNullable(jmh.get(row.jmh())), verdict,
                Medians.of(ratios(row, r, r.baseline)), Medians.of(r.baselineBytes.values()),
                Medians.of(ratios(row, r, r.bare)), Medians.of(pairedRatios(r.gatun, r.bare)));
    }

    /** Per-round ratios of {@code top}'s runs to {@code bottom}'s, where both ran. */
    private static List<Double> pairedRatios(Map<Integer, Double> top, Map<Integer, Double> bottom) {
        List<Double> ratios = new ArrayList<>();
        top.forEach((round, t) -> {
            Double b = bottom.get(round);
            if (b != null) {
                ratios.add(t / b);
            }
        });
        return ratios;
    }

    /** Whether any bare-downcall run was read (the table then shows its columns). */
    private boolean hasBare() {
        return runs.values().stream().anyMatch(r -> !r.bare.isEmpty());
    }

    /** Whether any baseline run was read (the table then shows its columns). */
    private boolean hasBaseline() {
        return runs.values().stream().anyMatch(r -> !r.baseline.isEmpty());
    }

    /** The whole report: what was run, the table, a count of goals, and the notes. */
    String render() {
        StringBuilder sb = new StringBuilder();
        sb.append("Gatun against C: ").append(rounds.size()).append(rounds.size() == 1 ? " round" : " rounds")
                .append(" of interleaved runs, one process each (warm-up N/2, N timed operations, one final sync)")
                .append(sliced ? "; rows of N ≥ " + String.format(Locale.ROOT, "%,d", SameProcess.SLICED_FROM)
                        + " in slices of the N shown, each slice a pair" : "")
                .append("\n\n");
        meta.forEach((k, v) -> sb.append("- ").append(k).append(": ").append(v).append('\n'));
        if (!meta.isEmpty()) {
            sb.append('\n');
        }
        boolean baseline = hasBaseline();
        boolean bare = hasBare();
        sb.append("| row | N | C | Gatun | Gatun/C: median (min–max) | pairs | B/op (twin) | ")
                .append(baseline ? "baseline/C | B/op (baseline) | " : "")
                .append(bare ? "bare FFM/C | Gatun/bare FFM | " : "")
                .append("B/op (JMH) | JMH score | goal | met |\n");
        sb.append("| --- | ---: | ---: | ---: | --- | ---: | ---: | ").append(baseline ? "---: | ---: | " : "")
                .append(bare ? "---: | ---: | " : "")
                .append("---: | ---: | --- | --- |\n");
        Map<Verdict.State, Integer> counts = new EnumMap<>(Verdict.State.class);
        for (TwinRow row : named) {
            Summary s = summary(row);
            counts.merge(s.verdict().state(), 1, Integer::sum);
            sb.append("| ").append(row.title())
                    .append(" | ").append(String.format(Locale.ROOT, "%,d", runs.get(row).n > 0 ? runs.get(row).n : row.n()))
                    .append(" | ").append(row.hasC() ? value(row, s.c()) : "–")
                    .append(" | ").append(value(row, s.gatun()))
                    .append(" | ").append(ratio(row, s))
                    .append(" | ").append(s.pairs())
                    .append(" | ").append(Goal.number(s.gatunBytes()))
                    .append(baseline ? " | " + Goal.number(s.baselineRatio()) + " | " + Goal.number(s.baselineBytes()) : "")
                    .append(bare ? " | " + Goal.number(s.bareRatio()) + " | " + Goal.number(s.gatunOverBare()) : "")
                    .append(" | ").append(s.jmh().map(j -> Goal.number(j.bytesPerOp())).orElse("–"))
                    .append(" | ").append(s.jmh().map(j -> jmhScore(row, j)).orElse("–"))
                    .append(" | ").append(goal(row))
                    .append(" | ").append(s.verdict().cell())
                    .append(" |\n");
        }
        sb.append('\n').append("Goals: ").append(counts.getOrDefault(Verdict.State.MET, 0)).append(" met, ")
                .append(counts.getOrDefault(Verdict.State.MISSED, 0)).append(" missed, ")
                .append(counts.getOrDefault(Verdict.State.UNDECIDED, 0)).append(" undecided (fewer than ")
                .append(Goal.MIN_PAIRS).append(" pairs, or no B/op), ")
                .append(counts.getOrDefault(Verdict.State.NOT_RUN, 0)).append(" not run (a library missing), of ")
                .append(named.size() - counts.getOrDefault(Verdict.State.NO_GOAL, 0))
                .append(" rows with a goal");
        if (named.size() < TwinRow.values().length) {
            sb.append("; ").append(TwinRow.values().length - named.size()).append(" of ")
                    .append(TwinRow.values().length).append(" rows were not run");
        }
        sb.append(".\n");
        if (!compiled.isEmpty()) {
            sb.append("\nTimed loops compiled by C2 before the reported runs (checks that found it / all checks):\n");
            compiled.forEach((row, byTwin) -> {
                sb.append("- ").append(row.id()).append(':');
                byTwin.forEach((twin, c) -> sb.append(' ').append(twin).append(' ').append(c[0]).append('/')
                        .append(c[0] + c[1]));
                sb.append('\n');
            });
        }
        List<String> all = new ArrayList<>(notes);
        skipped.forEach((row, why) -> {
            if (summary(row).verdict().state() != Verdict.State.NOT_RUN) {
                why.forEach(w -> all.add("a twin did not run " + row.id() + " (" + w + ")"));
            }
        });
        if (!all.isEmpty()) {
            sb.append("\nNotes:\n");
            all.forEach(n -> sb.append("- ").append(n).append('\n'));
        }
        return sb.toString();
    }

    /** Microseconds per operation, or for a bandwidth row GB/s (10^9 bytes per second). */
    private static String value(TwinRow row, double micros) {
        if (Double.isNaN(micros)) {
            return "–";
        }
        return row.transferBytes().map(b -> Goal.number(b / (micros * 1e3)) + " GB/s")
                .orElseGet(() -> Goal.number(micros) + " µs");
    }

    private static String ratio(TwinRow row, Summary s) {
        if (s.pairs() == 0) {
            return "–";
        }
        String text = Goal.number(s.ratio()) + " (" + Goal.number(s.ratioMin()) + "–" + Goal.number(s.ratioMax()) + ")";
        return row.goal() instanceof Goal.ExtraNanosAtMost ? text + ", " + Goal.plusNanos(s.extraNanos())
                : text;
    }

    private static String jmhScore(TwinRow row, Jmh j) {
        if (j.unit().equals("us/op")) {
            return Goal.number(j.score()) + " µs";
        }
        if (j.unit().equals("ops/s") && row.transferBytes().isPresent()) {
            return Goal.number(j.score() * row.transferBytes().get() / 1e9) + " GB/s";
        }
        return Goal.number(j.score()) + " " + j.unit();
    }

    private static String goal(TwinRow row) {
        String time = row.goal().text();
        if (row.bytesGoal() == TwinRow.NO_BYTES_GOAL) {
            return time;
        }
        String bytes = row.bytesGoal() == 0 ? "0 B/op" : "≤ " + row.bytesGoal() + " B/op";
        return time.isEmpty() ? bytes : time + ", " + bytes;
    }
}
