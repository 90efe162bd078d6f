package dev.gatun.cuda.bench;

import dev.gatun.cuda.profiling.CuptiActivity;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.TearDown;

/**
 * {@link LaunchBenchmark}'s rows with gatun-profiling's CUPTI activity started (kernel, copy
 * and memset records, no JFR recording): what CUPTI's instrumentation adds to a launch, read
 * beside LaunchBenchmark's rows of the same run, e.g.
 * {@code gatun.jar bench -prof gc 'LaunchBenchmark.launchEmptyKernel|CuptiLaunchBenchmark.launchEmptyKernel'}.
 */
public class CuptiLaunchBenchmark extends LaunchBenchmark {

    private CuptiActivity cupti;

    /** After LaunchBenchmark's own setup (JMH runs a superclass's first). */
    @Setup(Level.Trial)
    public void startCupti() {
        cupti = CuptiActivity.start();
    }

    @TearDown(Level.Trial)
    public void stopCupti() {
        cupti.close();
    }
}
