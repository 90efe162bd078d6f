package dev.gatun.cuda.bench;

import dev.gatun.cuda.Cuda;
import dev.gatun.cuda.CudaContext;
import dev.gatun.cuda.DeviceBuffer;
import dev.gatun.cuda.DeviceView;
import dev.gatun.cuda.Event;
import dev.gatun.cuda.Kernel;
import dev.gatun.cuda.KernelArg;
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
 * Host cost of eager kernel launches on one stream: an empty kernel, and a 4-argument kernel
 * (pointer, int, float, pointer) as prepared, with its scalars changed every launch, and with
 * all four arguments set every launch; a launch followed by a stream sync (the round trip);
 * {@code prepare()} of the 4-argument launch; and an event record + query. Run with
 * {@code -prof gc}: a warmed launch must allocate nothing (0 B/op). The stream is drained after
 * each iteration, so queued launches never pile up across iterations.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class LaunchBenchmark {

    private static final String SOURCE = """
            extern "C" __global__ void empty() {}
            extern "C" __global__ void four(float* out, int n, float a, const float* in) {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n) out[i] = a * in[i];
            }
            """;

    private CudaContext context;
    private Stream stream;
    private Kernel empty;
    private Kernel four;
    private DeviceBuffer in;
    private DeviceBuffer out;
    private KernelLaunch emptyLaunch;
    private KernelLaunch fourLaunch;
    private DeviceView outView;
    private DeviceView inView;
    private LaunchConfig fourConfig;
    private KernelArg[] fourArguments;
    private Event event;
    private int counter;

    @Setup
    public void setUp() {
        context = Cuda.system().device(0).context();
        stream = context.createStream();
        NvrtcLibrary.system().compiler().load(context.modules(), "bench-launch", SOURCE,
                CompileOptions.builder(CompileTarget.ptx(context.device().capabilities())).build(), "empty", "four");
        empty = context.modules().kernel("bench-launch", "empty");
        four = context.modules().kernel("bench-launch", "four");
        in = context.allocate(4 * 256);
        out = context.allocate(4 * 256);
        emptyLaunch = empty.prepare(LaunchConfig.of(1, 32));
        outView = out.asFloats();
        inView = in.asFloats();
        fourConfig = LaunchConfig.of(1, 256);
        fourArguments = new KernelArg[] {KernelArg.pointer(out), KernelArg.i32(256), KernelArg.f32(1f), KernelArg.pointer(in)};
        fourLaunch = four.prepare(fourConfig, fourArguments);
        event = context.createEvent();
    }

    @TearDown(Level.Iteration)
    public void drain() {
        stream.synchronize();
    }

    @TearDown
    public void tearDown() {
        stream.synchronize();
        event.close();
        in.close();
        out.close();
        empty.close();
        four.close();
        context.modules().unload("bench-launch");
        stream.close();
    }

    @Benchmark
    public void launchEmptyKernel() {
        emptyLaunch.launch(stream);
    }

    /** The two scalars (int, float) updated in place before every launch. */
    @Benchmark
    public void launchFourArgumentKernel() {
        int c = ++counter;
        fourLaunch.setInt(1, 128 + (c & 127)).setFloat(2, c);
        fourLaunch.launch(stream);
    }

    /** The 4-argument launch exactly as prepared: no argument changes. */
    @Benchmark
    public void launchFourArgumentKernelPrepared() {
        fourLaunch.launch(stream);
    }

    /** All four arguments set through the setters before every launch, as a caller with fresh buffers would. */
    @Benchmark
    public void launchFourArgumentKernelAllSetters() {
        int c = ++counter;
        fourLaunch.setPointer(0, outView).setInt(1, 128 + (c & 127)).setFloat(2, c).setPointer(3, inView);
        fourLaunch.launch(stream);
    }

    /** The round trip: an empty launch, then waiting for it. */
    @Benchmark
    public void launchAndSynchronize() {
        emptyLaunch.launch(stream);
        stream.synchronize();
    }

    /** Checking and building a 4-argument launch from arguments made once (no launch). */
    @Benchmark
    public KernelLaunch prepareFourArgumentLaunch() {
        return four.prepare(fourConfig, fourArguments);
    }

    @Benchmark
    public boolean recordAndQueryEvent() {
        event.record(stream);
        return event.query();
    }
}
