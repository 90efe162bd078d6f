package dev.gatun.cuda.bench;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Pattern;
import org.openjdk.jmh.profile.GCProfiler;
import org.openjdk.jmh.results.BenchmarkResult;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * Runs, once and with JMH's GC profiler ({@code -prof gc}), the JMH benchmark behind each
 * {@link TwinRow}, and prints one line per benchmark for {@link CompareTable}:
 *
 * <pre>JMH Class.method[:param=value] BYTES_PER_OP SCORE UNIT</pre>
 *
 * <p>BYTES_PER_OP is the median of {@code gc.alloc.rate.norm} over the measurement iterations,
 * not JMH's mean: JMH closes the trial's tear-down (closing owners, unloading modules) inside the
 * last iteration, whose allocation would otherwise be charged to the benchmarked operation.
 * Short iterations (2 × 1 s warm-up, 4 × 0.5 s measurement, one fork) keep the run to about six
 * seconds per benchmark; the score is secondary here, the twins give the timings.
 *
 * <pre>java -cp gatun.jar dev.gatun.cuda.bench.AllocationRun JMH_LOG [ROW...]</pre>
 *
 * JMH's own report goes to JMH_LOG; the rows default to all of them.
 */
public final class AllocationRun {

    private static final String PACKAGE = AllocationRun.class.getPackageName() + ".";
    private static final String NORM = "gc.alloc.rate.norm";

    private AllocationRun() {
    }

    public static void main(String[] args) throws RunnerException {
        if (args.length == 0) {
            System.err.println("usage: AllocationRun JMH_LOG [ROW...]");
            System.exit(2);
        }
        List<TwinRow> rows = new ArrayList<>();
        for (int i = 1; i < args.length; i++) {
            rows.add(TwinRow.byId(args[i]));
        }
        if (rows.isEmpty()) {
            rows.addAll(List.of(TwinRow.values()));
        }
        ChainedOptionsBuilder options = new OptionsBuilder()
                .forks(1)
                .warmupIterations(2)
                .warmupTime(TimeValue.seconds(1))
                .measurementIterations(4)
                .measurementTime(TimeValue.milliseconds(500))
                .timeout(TimeValue.seconds(60))
                .addProfiler(GCProfiler.class)
                .output(args[0]);
        Map<String, Set<String>> params = new TreeMap<>();
        for (TwinRow row : rows) {
            String[] benchmarkAndParam = row.jmh().split(":", 2);
            options.include("^" + Pattern.quote(PACKAGE + benchmarkAndParam[0]) + "$");
            if (benchmarkAndParam.length == 2) {
                String[] nameValue = benchmarkAndParam[1].split("=", 2);
                params.computeIfAbsent(nameValue[0], k -> new LinkedHashSet<>()).add(nameValue[1]);
            }
        }
        params.forEach((name, values) -> options.param(name, values.toArray(String[]::new)));
        for (RunResult result : new Runner(options.build()).run()) {
            System.out.println(line(result));
        }
    }

    private static String line(RunResult result) {
        Map<String, String> params = new TreeMap<>();
        for (String key : result.getParams().getParamsKeys()) {
            params.put(key, result.getParams().getParam(key));
        }
        List<Double> bytes = new ArrayList<>();
        for (BenchmarkResult benchmark : result.getBenchmarkResults()) {
            for (IterationResult iteration : benchmark.getIterationResults()) {
                iteration.getSecondaryResults().forEach((name, r) -> {
                    if (name.endsWith(NORM)) {
                        bytes.add(r.getScore());
                    }
                });
            }
        }
        Result<?> primary = result.getPrimaryResult();
        return line(result.getParams().getBenchmark(), params, bytes, primary.getScore(), primary.getScoreUnit());
    }

    /** The line for one benchmark (its full name, its parameters, B/op of each iteration, its score). */
    static String line(String benchmark, Map<String, String> params, Collection<Double> bytesPerIteration,
            double score, String unit) {
        StringBuilder key = new StringBuilder(benchmark.startsWith(PACKAGE) ? benchmark.substring(PACKAGE.length())
                : benchmark);
        String separator = ":";
        for (Map.Entry<String, String> p : new TreeMap<>(params).entrySet()) {
            key.append(separator).append(p.getKey()).append('=').append(p.getValue());
            separator = ",";
        }
        return "JMH " + key + " " + Medians.of(bytesPerIteration) + " " + score + " " + unit.replace(' ', '_');
    }
}
