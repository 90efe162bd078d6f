package example.kernelbench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.openjdk.jmh.results.AverageTimeResult;
import org.openjdk.jmh.results.BenchmarkResult;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.ResultRole;
import org.openjdk.jmh.results.ScalarResult;

/** The GPU time reaches JMH's results as a mean per operation, averaged over iterations. */
class GpuTimeProfilerTest {

    private final GpuTimeProfiler profiler = new GpuTimeProfiler();

    private List<Result> iteration(float... millis) {
        profiler.beforeIteration(null, null);
        for (float m : millis) {
            GpuTime.add(m);
        }
        return new ArrayList<>(profiler.afterIteration(null, null, null));
    }

    @Test
    void eachIterationReportsItsOwnMeanInMicroseconds() {
        List<Result> first = iteration(0.010f, 0.020f, 0.030f);
        assertEquals(1, first.size());
        ScalarResult r = (ScalarResult) first.getFirst();
        assertEquals(GpuTimeProfiler.RESULT, r.getLabel());
        assertEquals("us/op", r.getScoreUnit());
        assertEquals(20.0, r.getScore(), 1e-3);
        // A new iteration starts from nothing: not (10 + 20 + 30 + 50) / 4.
        assertEquals(50.0, iteration(0.050f).getFirst().getScore(), 1e-3);
    }

    @Test
    void iterationsAreAveragedNotSummed() {
        List<IterationResult> iterations = new ArrayList<>();
        for (float millis : new float[] {0.004f, 0.006f}) {
            IterationResult i = new IterationResult(null, null, null);
            // The round trip JMH itself timed: 1 operation in 10 µs (every iteration has a primary result).
            i.addResult(new AverageTimeResult(ResultRole.PRIMARY, "gpuTime", 1, 10_000, TimeUnit.MICROSECONDS));
            i.addResults(iteration(millis));
            iterations.add(i);
        }
        Result<?> run = new BenchmarkResult(null, iterations).getSecondaryResults().get(GpuTimeProfiler.RESULT);
        assertEquals(5.0, run.getScore(), 1e-3, "what JMH prints for the run: 4 and 6 µs averaged, not 10");
    }

    @Test
    void aBenchmarkThatRecordsNoGpuTimeGetsNoResult() {
        iteration(0.5f);
        assertTrue(iteration().isEmpty(), "the host-issue benchmark has no gpu.time");
    }
}
