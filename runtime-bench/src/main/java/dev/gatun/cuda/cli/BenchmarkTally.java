package dev.gatun.cuda.cli;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.results.BenchmarkResult;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.format.OutputFormat;

/**
 * JMH's output, passed on unchanged, with a note of which benchmarks failed. JMH starts every
 * benchmark (each parameter combination) with {@link #startBenchmark}, prints a failure as
 * {@code <failure>} and goes on to the next. JMH 1.37 marks the failure in one of two ways: run
 * in a forked JVM, the benchmark ends with no result ({@code endBenchmark(null)}); run in JMH's
 * own JVM ({@code -f 0}), or when its fork died, it never ends. So a benchmark failed unless it
 * ended with a result.
 */
final class BenchmarkTally implements OutputFormat {

    private final OutputFormat delegate;
    private final List<BenchmarkParams> failed = new ArrayList<>();
    private int started;
    private BenchmarkParams running;

    BenchmarkTally(OutputFormat delegate) {
        this.delegate = delegate;
    }

    /** How many benchmarks (parameter combinations) JMH started. */
    int started() {
        return started;
    }

    /** The benchmarks that did not end with a result, as "benchmark (key=value, ...)". */
    List<String> failures() {
        List<String> names = new ArrayList<>();
        List<BenchmarkParams> all = new ArrayList<>(failed);
        if (running != null) {
            all.add(running);   // the last one, when the run stopped without ending it
        }
        for (BenchmarkParams params : all) {
            names.add(name(params));
        }
        return names;
    }

    private static String name(BenchmarkParams params) {
        List<String> values = new ArrayList<>();
        for (String key : params.getParamsKeys()) {
            values.add(key + "=" + params.getParam(key));
        }
        return values.isEmpty() ? params.getBenchmark() : params.getBenchmark() + " (" + String.join(", ", values) + ")";
    }

    @Override
    public void startBenchmark(BenchmarkParams params) {
        if (running != null) {
            failed.add(running);
        }
        running = params;
        started++;
        delegate.startBenchmark(params);
    }

    @Override
    public void endBenchmark(BenchmarkResult result) {
        if (result == null && running != null) {
            failed.add(running);
        }
        running = null;
        delegate.endBenchmark(result);
    }

    @Override
    public void endRun(Collection<RunResult> result) {
        if (running != null) {
            failed.add(running);
            running = null;
        }
        delegate.endRun(result);
    }

    @Override
    public void iteration(BenchmarkParams benchParams, IterationParams params, int iteration) {
        delegate.iteration(benchParams, params, iteration);
    }

    @Override
    public void iterationResult(BenchmarkParams benchParams, IterationParams params, int iteration, IterationResult data) {
        delegate.iterationResult(benchParams, params, iteration, data);
    }

    @Override
    public void startRun() {
        delegate.startRun();
    }

    @Override
    public void print(String s) {
        delegate.print(s);
    }

    @Override
    public void println(String s) {
        delegate.println(s);
    }

    @Override
    public void flush() {
        delegate.flush();
    }

    @Override
    public void close() {
        delegate.close();
    }

    @Override
    public void verbosePrintln(String s) {
        delegate.verbosePrintln(s);
    }

    @Override
    public void write(int b) {
        delegate.write(b);
    }

    @Override
    public void write(byte[] b) throws IOException {
        delegate.write(b);
    }
}
