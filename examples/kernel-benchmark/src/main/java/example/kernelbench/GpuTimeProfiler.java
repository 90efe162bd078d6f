package example.kernelbench;

import java.util.Collection;
import java.util.List;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.profile.InternalProfiler;
import org.openjdk.jmh.results.AggregationPolicy;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.ScalarResult;

/**
 * Reports the GPU time a benchmark measured with events ({@link GpuTime}) beside JMH's wall-clock
 * score, as the secondary result {@code gpu.time} in µs per operation, averaged over iterations:
 * {@code -prof example.kernelbench.GpuTimeProfiler}. (JMH's {@code @AuxCounters} would sum it
 * over the iterations instead.) It runs in the benchmark's JVM, so it reads what the benchmark
 * added there.
 */
public final class GpuTimeProfiler implements InternalProfiler {

    /** The secondary result's name. */
    public static final String RESULT = "gpu.time";

    @Override
    public String getDescription() {
        return "GPU time per operation, from the timing events the benchmark records (GpuTime.add)";
    }

    @Override
    public void beforeIteration(BenchmarkParams benchmark, IterationParams iteration) {
        GpuTime.reset();
    }

    @Override
    public Collection<? extends Result> afterIteration(BenchmarkParams benchmark, IterationParams iteration,
            IterationResult result) {
        if (GpuTime.count() == 0) {
            return List.of(); // a benchmark that records no GPU time, such as the host-issue one
        }
        return List.of(new ScalarResult(RESULT, GpuTime.meanMicros(), "us/op", AggregationPolicy.AVG));
    }
}
