package dev.gatun.cuda.bench;

import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelLaunch;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.graph.CudaGraphs;
import dev.gatun.cuda.graph.GraphSlot;
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
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Host cost of replaying a captured graph of {@code kernels} empty kernels, and of the same
 * kernels launched eagerly one by one. Run with {@code -prof gc}: a warmed replay must allocate
 * nothing (0 B/op). The stream is drained after each iteration.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class GraphReplayBenchmark {

    @Param({"1", "10", "20"})
    public int kernels;

    private CudaContext context;
    private CudaGraphs graphs;
    private GraphSlot slot;
    private Stream stream;
    private Kernel empty;
    private KernelLaunch launch;

    @Setup
    public void setUp() {
        context = Cuda.system().device(0).context();
        graphs = CudaGraphs.create(context);
        stream = context.createStream();
        NvrtcLibrary.system().compiler().load(context.modules(), "bench-graph", "extern \"C\" __global__ void empty() {}",
                CompileOptions.of(CompileTarget.ptx(context.device().capabilities())), "empty");
        empty = context.modules().kernel("bench-graph", "empty");
        launch = empty.prepare(LaunchConfig.of(1, 32));
        slot = graphs.registerGroup("bench").slot("replay");
        slot.beginCapture(stream, CaptureMode.THREAD_LOCAL);
        for (int i = 0; i < kernels; i++) {
            launch.launch(stream);
        }
        slot.endCapture();
    }

    @TearDown(Level.Iteration)
    public void drain() {
        stream.synchronize();
    }

    @TearDown
    public void tearDown() {
        stream.synchronize();
        graphs.close(); // retires the slot's group
        empty.close();
        context.modules().unload("bench-graph");
        context.reap();
        stream.close();
    }

    @Benchmark
    public void replayGraph() {
        slot.replay(stream);
    }

    @Benchmark
    public void launchEagerly() {
        for (int i = 0; i < kernels; i++) {
            launch.launch(stream);
        }
    }
}
