package dev.gatun.cuda.bench;

import dev.gatun.cuda.ClusterSchedulingPolicy;
import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.Event;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelLaunch;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.nvrtc.CompileOptions;
import dev.gatun.cuda.nvrtc.CompileTarget;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Host cost of an empty kernel launched through {@code cuLaunchKernelEx} with launch attributes:
 * programmatic stream serialization (PDL), a priority, a cluster with a scheduling policy, and a
 * programmatic event (which each launch checks open and records as used on its stream); compare with {@link LaunchBenchmark#launchEmptyKernel} ({@code cuLaunchKernel}). Run with
 * {@code -prof gc}: a warmed launch must allocate nothing (0 B/op). Needs compute capability 9.0+
 * (PDL and clusters); setUp refuses an older device.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class LaunchAttributesBenchmark {

    private static final String SOURCE = """
            extern "C" __global__ void empty() {}
            """;

    private CudaContext context;
    private Stream stream;
    private Kernel empty;
    private KernelLaunch programmatic;
    private KernelLaunch prioritized;
    private KernelLaunch clustered;
    private Event triggered;
    private KernelLaunch withEvent;

    @Setup
    public void setUp() {
        context = Cuda.system().device(0).context();
        stream = context.createStream();
        NvrtcLibrary.system().compiler().load(context.modules(), "bench-attributes", SOURCE,
                CompileOptions.builder(CompileTarget.ptx(context.device().capabilities())).build(), "empty");
        empty = context.modules().kernel("bench-attributes", "empty");
        LaunchConfig one = LaunchConfig.of(1, 32);
        programmatic = empty.prepare(one.withProgrammaticStreamSerialization(true));
        prioritized = empty.prepare(one.withPriority(context.greatestStreamPriority()));
        clustered = empty.prepare(LaunchConfig.of(2, 32).withCluster(2, 1, 1)
                .withClusterSchedulingPolicy(ClusterSchedulingPolicy.SPREAD));
        triggered = context.createEvent();
        withEvent = empty.prepare(one.withProgrammaticEvent(triggered, false));
    }

    @TearDown(Level.Iteration)
    public void drain() {
        stream.synchronize();
    }

    @TearDown
    public void tearDown() {
        stream.synchronize();
        triggered.close();
        empty.close();
        context.modules().unload("bench-attributes");
        stream.close();
    }

    @Benchmark
    public void launchProgrammaticDependent() {
        programmatic.launch(stream);
    }

    @Benchmark
    public void launchWithPriority() {
        prioritized.launch(stream);
    }

    @Benchmark
    public void launchWithProgrammaticEvent() {
        withEvent.launch(stream);
    }

    @Benchmark
    public void launchClusterWithSchedulingPolicy() {
        clustered.launch(stream);
    }
}
