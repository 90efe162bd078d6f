package dev.gatun.cuda.bench;

import dev.gatun.cuda.CaptureMode;
import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.Graph;
import dev.gatun.cuda.GraphExec;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.StreamCapture;
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
 * Host cost of graphs that allocate inside their capture (graph memory nodes): a replay of a
 * graph whose capture allocated a 1 MiB scratch buffer, used it in a kernel and freed it, and
 * allocated a 1 MiB output it keeps (each launch frees the previous launch's output first); and
 * the whole cold path of making such a graph: begin a capture, two allocations, two launches, a
 * free node, end, instantiate, close. Run with {@code -prof gc}: a warmed replay must allocate
 * nothing (0 B/op). The stream is drained after each iteration.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class GraphMemoryBenchmark {

    private static final long BYTES = 1 << 20;

    private CudaContext context;
    private Stream stream;
    private Kernel touch;
    private Graph graph;
    private GraphExec exec;

    @Setup
    public void setUp() {
        context = Cuda.system().device(0).context();
        stream = context.createStream();
        NvrtcLibrary.system().compiler().load(context.modules(), "bench-graph-memory",
                "extern \"C\" __global__ void touch(int* p) { p[threadIdx.x] = threadIdx.x; }",
                CompileOptions.of(CompileTarget.ptx(context.device().capabilities())), "touch");
        touch = context.modules().kernel("bench-graph-memory", "touch");
        graph = capture();
        exec = graph.instantiate();
    }

    /** The graph: scratch allocated, touched, freed; output allocated, touched, kept. */
    private Graph capture() {
        try (StreamCapture capture = stream.beginCapture(CaptureMode.THREAD_LOCAL)) {
            DeviceBuffer scratch = stream.allocate(BYTES);
            touch.launch(stream, LaunchConfig.of(1, 32), KernelArg.pointer(scratch));
            DeviceBuffer out = stream.allocate(BYTES);
            touch.launch(stream, LaunchConfig.of(1, 32), KernelArg.pointer(out));
            scratch.close();
            return capture.end();
        }
    }

    @TearDown(Level.Iteration)
    public void drain() {
        stream.synchronize();
        context.reap();
    }

    @TearDown
    public void tearDown() {
        stream.synchronize();
        exec.close();
        graph.allocations().forEach(DeviceBuffer::close);
        graph.close();
        touch.close();
        context.modules().unload("bench-graph-memory");
        context.synchronize();
        context.diagnostics().trimGraphMemory();
        stream.close();
    }

    @Benchmark
    public void replayGraphThatAllocates() {
        exec.launch(stream);
    }

    @Benchmark
    public void captureAllocateAndInstantiate() {
        Graph g = capture();
        GraphExec e = g.instantiate();
        e.close(); // never launched: its allocations hold no memory, and retirement frees none
        g.allocations().forEach(DeviceBuffer::close);
        g.close();
    }
}
