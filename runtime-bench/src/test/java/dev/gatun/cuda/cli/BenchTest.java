package dev.gatun.cuda.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaUnavailableException;
import dev.gatun.cuda.doctor.Diagnosis;
import dev.gatun.cuda.testing.FakeCuda;
import dev.gatun.cuda.testing.FakeDriverApi;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.results.AverageTimeResult;
import org.openjdk.jmh.results.BenchmarkResult;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.IterationResultMetaData;
import org.openjdk.jmh.results.ResultRole;
import org.openjdk.jmh.runner.IterationType;
import org.openjdk.jmh.runner.NoBenchmarksException;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.WorkloadParams;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * {@code gatun bench} exits non-zero when JMH reports a benchmark as failed or when there is no
 * device to run on. A stand-in for JMH's Runner drives the output format the way JMH 1.37 does
 * (checked against real runs of the benchmarks without a driver): a benchmark that failed in a
 * forked JVM ends with no result, one that failed in JMH's own JVM ({@code -f 0}) never ends.
 */
class BenchTest {

    private static final Supplier<Cuda> TWO_DEVICES = () -> FakeCuda.over(new FakeDriverApi().deviceCount(2));

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int bench(Supplier<Cuda> driver, Bench.Runs runs, String... args) throws Exception {
        return new Bench(driver, runs).run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private String err() {
        return err.toString(StandardCharsets.UTF_8);
    }

    @Test
    void withoutADriverItRunsNothingAndExitsThree() throws Exception {
        Supplier<Cuda> none = () -> {
            throw new CudaUnavailableException("No CUDA driver could be loaded. Tried:\n  - libcuda.so.1: not found",
                    List.of("libcuda.so.1: not found"));
        };
        List<String> ran = new ArrayList<>();
        int exit = bench(none, (options, format) -> ran.add("run"), "-f", "1");
        assertEquals(Diagnosis.EXIT_NO_DEVICE, exit, err());
        assertEquals(List.of(), ran, "no benchmark is started without a device");
        assertTrue(err().contains("no usable CUDA device"), err());
        assertTrue(err().contains("  - libcuda.so.1: not found"), "the loader's reasons: " + err());
        assertTrue(err().contains("gatun doctor"), err());
    }

    @Test
    void aDriverWithoutDevicesExitsThree() throws Exception {
        List<String> ran = new ArrayList<>();
        int exit = bench(() -> FakeCuda.over(new FakeDriverApi().deviceCount(0)), (options, format) -> ran.add("run"));
        assertEquals(Diagnosis.EXIT_NO_DEVICE, exit, err());
        assertEquals(List.of(), ran);
        assertTrue(err().contains("the driver reports no device"), err());
    }

    @Test
    void aForkedBenchmarkThatEndedWithoutAResultFailsTheRunAndIsNamed() throws Exception {
        BenchmarkParams launch = params("dev.gatun.cuda.bench.LaunchBenchmark.launchEmptyKernel", null);
        BenchmarkParams replay = params("dev.gatun.cuda.bench.GraphReplayBenchmark.replayGraph", "20");
        int exit = bench(TWO_DEVICES, (options, format) -> {
            format.startRun();
            format.startBenchmark(replay);
            format.endBenchmark(null);              // the fork printed <failure>: no result
            format.startBenchmark(launch);
            format.endBenchmark(resultOf(launch));
            format.endRun(List.of());
        });
        assertEquals(Bench.EXIT_FAILED, exit, err());
        assertTrue(err().contains("1 of 2 benchmarks failed"), err());
        assertTrue(err().contains("dev.gatun.cuda.bench.GraphReplayBenchmark.replayGraph (kernels=20)"), err());
        assertFalse(err().contains("launchEmptyKernel"), err());
    }

    @Test
    void aBenchmarkThatNeverEndedFailsTheRunAndIsNamed() throws Exception {
        BenchmarkParams launch = params("dev.gatun.cuda.bench.LaunchBenchmark.launchEmptyKernel", null);
        BenchmarkParams replay = params("dev.gatun.cuda.bench.GraphReplayBenchmark.replayGraph", "20");
        BenchmarkParams copy = params("dev.gatun.cuda.bench.CopyBenchmark.copyDeviceToDeviceAsync", null);
        int exit = bench(TWO_DEVICES, (options, format) -> {
            format.startRun();
            format.startBenchmark(launch);
            format.endBenchmark(resultOf(launch));
            format.startBenchmark(replay);          // failed in JMH's JVM: never ended
            format.startBenchmark(copy);            // failed as the last one
            format.endRun(List.of());
        }, "-f", "0");
        assertEquals(Bench.EXIT_FAILED, exit, err());
        assertTrue(err().contains("2 of 3 benchmarks failed"), err());
        assertTrue(err().contains("dev.gatun.cuda.bench.GraphReplayBenchmark.replayGraph (kernels=20)"), err());
        assertTrue(err().contains("dev.gatun.cuda.bench.CopyBenchmark.copyDeviceToDeviceAsync"), err());
        assertFalse(err().contains("launchEmptyKernel"), err());
    }

    @Test
    void aRunWhoseBenchmarksAllEndedWithResultsExitsZero() throws Exception {
        BenchmarkParams launch = params("dev.gatun.cuda.bench.LaunchBenchmark.launchEmptyKernel", null);
        int exit = bench(TWO_DEVICES, (options, format) -> {
            format.startRun();
            format.startBenchmark(launch);
            format.endBenchmark(resultOf(launch));
            format.endRun(List.of());
        });
        assertEquals(0, exit, err());
        assertEquals("", err());
    }

    @Test
    void jmhStoppingTheRunExitsOne() throws Exception {
        int exit = bench(TWO_DEVICES, (options, format) -> {
            throw new RunnerException("Benchmark had encountered error, and fail on error was requested");
        }, "-foe", "true");
        assertEquals(Bench.EXIT_FAILED, exit, err());
        assertTrue(err().contains("fail on error was requested"), err());
    }

    @Test
    void aPatternThatMatchesNoBenchmarkIsAUsageError() throws Exception {
        int exit = bench(TWO_DEVICES, (options, format) -> {
            throw new NoBenchmarksException();
        }, "NoSuchBenchmark");
        assertEquals(GatunCli.EXIT_USAGE, exit, err());
        assertTrue(err().contains("no benchmark matches [NoSuchBenchmark]"), err());
        assertTrue(err().contains("gatun bench -l"), err());
    }

    @Test
    void anUnknownJmhOptionIsRejectedWithTheUsage() throws Exception {
        List<String> ran = new ArrayList<>();
        int exit = bench(TWO_DEVICES, (options, format) -> ran.add("run"), "--no-such-option");
        assertEquals(GatunCli.EXIT_USAGE, exit, err());
        assertTrue(err().contains("usage: gatun <command>"), err());
        assertEquals(List.of(), ran);
    }

    @Test
    void theJmhOptionsReachTheRunner() throws Exception {
        List<String> seen = new ArrayList<>();
        int exit = bench(TWO_DEVICES, (options, format) -> {
            seen.add(options.getIncludes().toString());
            seen.add(String.valueOf(options.getForkCount().get()));
        }, "-f", "2", "Launch");
        assertEquals(0, exit, err());
        assertEquals(List.of("[Launch]", "2"), seen);
    }

    /** One measured iteration: 1,000 operations in 4 ms. */
    private static BenchmarkResult resultOf(BenchmarkParams params) {
        IterationResult iteration = new IterationResult(params, params.getMeasurement(), new IterationResultMetaData(1, 1));
        iteration.addResult(new AverageTimeResult(ResultRole.PRIMARY, "", 1000, 4_000_000, TimeUnit.MICROSECONDS));
        return new BenchmarkResult(params, List.of(iteration));
    }

    private static BenchmarkParams params(String benchmark, String kernels) {
        WorkloadParams workload = new WorkloadParams();
        if (kernels != null) {
            workload.put("kernels", kernels, 0);
        }
        IterationParams iteration = new IterationParams(IterationType.MEASUREMENT, 1, TimeValue.seconds(1), 1);
        return new BenchmarkParams(benchmark, benchmark + "_jmhTest", false, 1, new int[] {1}, List.of(), 1, 0,
                iteration, iteration, Mode.AverageTime, workload, TimeUnit.MICROSECONDS, 1, "java", List.of(), "25",
                "vm", "25", "1.37", TimeValue.minutes(10));
    }
}
