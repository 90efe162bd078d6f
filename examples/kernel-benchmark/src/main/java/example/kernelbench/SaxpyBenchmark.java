package example.kernelbench;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.Event;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.Stream;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * A user's own kernel ({@link Saxpy}) measured two ways: its GPU time, by events recorded around
 * each launch, and the host's cost to issue a launch, by wall clock with nothing waited for.
 *
 * <pre>
 * java -jar target/benchmarks.jar -prof example.kernelbench.GpuTimeProfiler -prof gc
 * </pre>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
// Each fork is a new JVM: Gatun's downcalls need native access there, as on any java command line.
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class SaxpyBenchmark {

    /**
     * What every measurement shares, made once per fork and closed at its end: the context, the
     * kernel compiled by NVRTC, its inputs on the device, the prepared launch, a stream and two
     * timing events. Nothing here is measured.
     */
    @State(Scope.Thread)
    public static class Gpu {

        @Param("1048576")
        public int elements;

        CudaContext context;
        Kernel kernel;
        Saxpy saxpy;
        Stream stream;
        Event start;
        Event end;

        @Setup(Level.Trial)
        public void open() {
            context = Cuda.system().device(0).context();
            kernel = Saxpy.compile(context);
            saxpy = new Saxpy(context, kernel, elements, 2f, 42);
            stream = context.createStream();
            start = context.createTimingEvent();
            end = context.createTimingEvent();
        }

        @TearDown(Level.Trial)
        public void close() {
            // In the reverse order of their making; closing the context unloads the module.
            stream.synchronize();
            end.close();
            start.close();
            stream.close();
            saxpy.close();
            kernel.close();
            context.close();
        }
    }

    /** The host-issue measurement's batch, queued on a stream drained before it, outside the measured time. */
    @State(Scope.Thread)
    public static class Drained {

        /** Far below the driver's launch queue (about a thousand): no launch of a batch waits for the GPU. */
        public static final int BATCH = 64;

        Gpu gpu;

        @Setup(Level.Trial)
        public void bind(Gpu shared) {
            gpu = shared;
        }

        @Setup(Level.Invocation)
        public void drain() {
            gpu.stream.synchronize();
        }
    }

    /**
     * The kernel's GPU time: events recorded before and after one launch, and the end waited for.
     * JMH's score is that round trip on the wall clock; {@link GpuTimeProfiler} reports the time
     * between the events, the kernel alone, as {@code gpu.time}.
     */
    @Benchmark
    public void gpuTime(Gpu gpu) {
        gpu.start.record(gpu.stream);
        gpu.saxpy.launch().launch(gpu.stream);
        gpu.end.record(gpu.stream);
        gpu.end.synchronize();
        GpuTime.add(gpu.end.elapsedMillis(gpu.start));
    }

    /**
     * The host's cost to issue one launch: a batch of {@link Drained#BATCH} launches queued on an
     * idle stream, nothing waited for, timed by JMH's wall clock and divided by the batch.
     */
    @Benchmark
    @OperationsPerInvocation(Drained.BATCH)
    public void issue(Drained drained) {
        for (int i = 0; i < Drained.BATCH; i++) {
            drained.gpu.saxpy.launch().launch(drained.gpu.stream);
        }
    }
}
