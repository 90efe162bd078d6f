package dev.gatun.cuda.bench;

import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.Event;
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
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Host-only issue cost of an empty launch, a replay of a 1-kernel graph and an event record.
 * Each invocation issues a batch of {@value TwinRow#BATCH}, well below the launch queue's depth
 * (about a thousand launches), onto a stream that was drained before it, outside the measured
 * region ({@code @Setup(Level.Invocation)}); nothing inside the measured region waits for the
 * GPU. The throughput rows (LaunchBenchmark, GraphReplayBenchmark) can be paced by the device;
 * these cannot. JMH times each invocation on its own, which adds two clock reads (tens of ns)
 * per batch: under 1 ns per operation.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@OperationsPerInvocation(TwinRow.BATCH)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class IssueCostBenchmark {

    private CudaContext context;
    private CudaGraphs graphs;
    private GraphSlot slot;
    private Stream stream;
    private Kernel empty;
    private KernelLaunch emptyLaunch;
    private Event event;

    @Setup
    public void setUp() {
        context = Cuda.system().device(0).context();
        graphs = CudaGraphs.create(context);
        stream = context.createStream();
        NvrtcLibrary.system().compiler().load(context.modules(), "bench-issue", "extern \"C\" __global__ void empty() {}",
                CompileOptions.of(CompileTarget.ptx(context.device().capabilities())), "empty");
        empty = context.modules().kernel("bench-issue", "empty");
        emptyLaunch = empty.prepare(LaunchConfig.of(1, 32));
        event = context.createEvent();
        slot = graphs.registerGroup("bench").slot("replay");
        slot.beginCapture(stream, CaptureMode.THREAD_LOCAL);
        emptyLaunch.launch(stream);
        slot.endCapture();
    }

    /** Not measured: every batch starts on an idle stream. */
    @Setup(Level.Invocation)
    public void drain() {
        stream.synchronize();
    }

    @TearDown
    public void tearDown() {
        stream.synchronize();
        event.close();
        graphs.close(); // retires the slot's owner
        empty.close();
        context.modules().unload("bench-issue");
        context.reap();
        stream.close();
    }

    @Benchmark
    public void launch() {
        for (int i = 0; i < TwinRow.BATCH; i++) {
            emptyLaunch.launch(stream);
        }
    }

    @Benchmark
    public void replay() {
        for (int i = 0; i < TwinRow.BATCH; i++) {
            slot.replay(stream);
        }
    }

    @Benchmark
    public void recordEvent() {
        for (int i = 0; i < TwinRow.BATCH; i++) {
            event.record(stream);
        }
    }
}
