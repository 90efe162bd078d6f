package example.kernelbench;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import org.openjdk.jmh.profile.GCProfiler;
import org.openjdk.jmh.results.BenchmarkResult;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * The {@code -prof gc} check: runs the benchmarks briefly with JMH's GC profiler and fails when
 * a warmed one allocates. Gatun's launch, event record and query allocate nothing once warm; a
 * benchmark that does has an allocation of its own in the measured path (boxing, a lambda, a
 * varargs array), which costs more than the launch it surrounds.
 *
 * <pre>
 * java -cp target/benchmarks.jar example.kernelbench.AllocationCheck [JMH include regex]
 * </pre>
 *
 * Prints one {@code ALLOCATION} line per benchmark; exit 0 when none allocates, 1 when one does or
 * none ran.
 */
public final class AllocationCheck {

    /** JMH's GC profiler result: bytes allocated per operation by the benchmark's thread. */
    static final String NORM = "gc.alloc.rate.norm";
    /**
     * What "nothing" is: JMH's own bookkeeping shows as tenths of a byte per operation, and a
     * real allocation in the measured path as 16 bytes or more.
     */
    static final double LIMIT_BYTES_PER_OP = 1.0;

    private AllocationCheck() {
    }

    /**
     * One benchmark's verdict from its measurement iterations' bytes per operation: their median,
     * so that the last iteration, which JMH charges with the trial's tear-down, does not decide.
     */
    record Verdict(String benchmark, double bytesPerOp, boolean allocates) {

        static Verdict of(String benchmark, List<Double> bytesPerOpByIteration) {
            if (bytesPerOpByIteration.isEmpty()) {
                throw new IllegalArgumentException(benchmark + " has no " + NORM + " results: run it with JMH's GC "
                        + "profiler (-prof gc)");
            }
            List<Double> sorted = bytesPerOpByIteration.stream().sorted().toList();
            int middle = sorted.size() / 2;
            double median = sorted.size() % 2 == 1 ? sorted.get(middle) : (sorted.get(middle - 1) + sorted.get(middle)) / 2;
            return new Verdict(benchmark, median, median >= LIMIT_BYTES_PER_OP);
        }

        String line() {
            return String.format(java.util.Locale.ROOT, "ALLOCATION %s %.2f B/op: %s", benchmark, bytesPerOp,
                    allocates ? "ALLOCATES (limit " + LIMIT_BYTES_PER_OP + " B/op)" : "none");
        }
    }

    public static void main(String[] args) throws RunnerException {
        String include = args.length > 0 ? args[0] : SaxpyBenchmark.class.getName();
        Collection<RunResult> results = new Runner(new OptionsBuilder()
                .include(include)
                .forks(1)
                .warmupIterations(2)
                .warmupTime(TimeValue.seconds(1))
                .measurementIterations(3)
                .measurementTime(TimeValue.seconds(1))
                .addProfiler(GCProfiler.class)
                .addProfiler(GpuTimeProfiler.class)
                .build()).run();
        if (results.isEmpty()) {
            System.out.println("ALLOCATION no benchmark ran to the end (JMH's output above says why: without a GPU, "
                    + "the loader's CudaUnavailableException)");
        }
        boolean allocates = false;
        for (RunResult run : results) {
            Verdict verdict = Verdict.of(run.getParams().getBenchmark(), bytesPerOp(run));
            System.out.println(verdict.line());
            allocates |= verdict.allocates();
        }
        System.exit(results.isEmpty() || allocates ? 1 : 0);
    }

    /** The GC profiler's bytes per operation, one value per measurement iteration. */
    static List<Double> bytesPerOp(RunResult run) {
        List<Double> bytes = new ArrayList<>();
        for (BenchmarkResult benchmark : run.getBenchmarkResults()) {
            for (IterationResult iteration : benchmark.getIterationResults()) {
                Result<?> norm = iteration.getSecondaryResults().get(NORM);
                if (norm != null) {
                    bytes.add(norm.getScore());
                }
            }
        }
        return bytes;
    }
}
