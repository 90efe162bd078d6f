package dev.gatun.cuda.bench;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelLaunch;
import dev.gatun.cuda.LaunchConfig;
import dev.gatun.cuda.Stream;
import dev.gatun.cuda.nvrtc.CompileOptions;
import dev.gatun.cuda.nvrtc.CompileTarget;
import dev.gatun.cuda.nvrtc.NvrtcLibrary;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
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
 * Host cost of completion futures ({@code Stream.onComplete}, one {@code cuLaunchHostFunc}
 * each): an empty launch followed by a future, with and without waiting for it; compare the round
 * trip with {@link LaunchBenchmark#launchAndSynchronize}. Futures complete on Gatun's dispatcher
 * thread ({@code Runnable::run}), so no executor's cost is in the figures. Run with
 * {@code -prof gc}: a future is one allocation by design, plus the registry's and the host
 * function's bookkeeping (runtime-core/README.md, "Completion as CompletableFuture", gives the
 * expected floor); it is not a zero-allocation path.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class CompletionBenchmark {

    private static final String SOURCE = """
            extern "C" __global__ void empty() {}
            """;
    private static final Executor INLINE = Runnable::run;

    private CudaContext context;
    private Stream stream;
    private Kernel empty;
    private KernelLaunch launch;

    @Setup
    public void setUp() {
        context = Cuda.system().device(0).context();
        stream = context.createStream();
        NvrtcLibrary.system().compiler().load(context.modules(), "bench-completion", SOURCE,
                CompileOptions.builder(CompileTarget.ptx(context.device().capabilities())).build(), "empty");
        empty = context.modules().kernel("bench-completion", "empty");
        launch = empty.prepare(LaunchConfig.of(1, 32));
    }

    @TearDown(Level.Iteration)
    public void drain() {
        stream.synchronize();
    }

    @TearDown
    public void tearDown() {
        stream.synchronize();
        empty.close();
        context.modules().unload("bench-completion");
        stream.close();
    }

    /** Launch, ask for the completion, wait for it: the asynchronous round trip. */
    @Benchmark
    public void launchAndJoinCompletion() {
        launch.launch(stream);
        stream.onComplete(INLINE).join();
    }

    /** Launch and ask for the completion without waiting: the issue cost of a future. */
    @Benchmark
    public CompletableFuture<Void> launchAndOnComplete() {
        launch.launch(stream);
        return stream.onComplete(INLINE);
    }
}
